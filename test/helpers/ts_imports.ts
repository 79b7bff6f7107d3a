/**
 * Every import of a TypeScript module, in every form the layer test
 * (test/structure/layers.test.ts) must see: static `import` / `export ...
 * from` (type-only ones included), `import("x")` (in code or in a type),
 * `require("x")` and `import.meta.require("x")`. A dynamic import or a
 * require of anything but a string literal is reported with a null
 * specifier, since no reader can tell what it loads.
 *
 * Comments are skipped and string, template and regular-expression
 * literals are read as literals, so an import written inside one of them
 * is not an import.
 */

export type ImportForm = "static" | "dynamic" | "require";

/** One import: `specifier` is null where the name is computed;
 * `typeOnly` for `import type` / `export type` statements, the only
 * imports that compiling erases (tsconfig.json has verbatimModuleSyntax:
 * `import { type X }` stays, as an import of the module). */
export type FoundImport = { form: ImportForm; specifier: string | null; typeOnly: boolean; line: number };

/** Code with comments blanked and every literal's body replaced by `_`,
 * same length as the source, and each string literal's value by the
 * offset of its opening quote (null for a template with substitutions). */
type Masked = { code: string; literals: Map<number, string | null> };

/** Characters after which a `/` starts a regular expression, not a division. */
const beforeRegex = new Set("(,=:[!&|?{};+-*%<>~^");
const regexKeywords = /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|new|delete|void|throw|yield|await)$/;

function mask(source: string): Masked {
  let out = "";
  const push = (...parts: string[]) => { out += parts.join(""); };
  const literals = new Map<number, string | null>();
  /** Brace depth of each template substitution we are inside. */
  const templates: number[] = [];
  let depth = 0;
  // A shebang line is no code.
  let i = source.startsWith("#!") ? source.indexOf("\n") : 0;
  if (i < 0) i = source.length;
  out += " ".repeat(i);
  const blank = (text: string) => text.replace(/[^\n]/g, " ");
  /** A literal's body, source[from, to), as "_" (line breaks kept). */
  const body = (from: number, to: number) => source.slice(from, Math.max(from, to)).replace(/[^\n]/g, "_");
  /** A quoted string from `i` (its quote); returns its end. */
  const quoted = (quote: string): number => {
    let j = i + 1;
    let value = "";
    while (j < source.length && source[j] !== quote && source[j] !== "\n") {
      if (source[j] === "\\") { value += source[j + 1] ?? ""; j += 2; continue; }
      value += source[j++];
    }
    literals.set(i, value);
    push(quote, body(i + 1, j), source[j] === quote ? quote : "");
    return j + (source[j] === quote ? 1 : 0);
  };
  /** A template's text from `i` (just after "`" or "}") up to its end or
   * its next substitution; returns where it stopped and whether the
   * template ended. */
  const templateText = (start: number): { end: number; closed: boolean; value: string; plain: boolean } => {
    let j = start;
    let value = "";
    while (j < source.length) {
      if (source[j] === "\\") { value += source[j + 1] ?? ""; j += 2; continue; }
      if (source[j] === "`") return { end: j + 1, closed: true, value, plain: true };
      if (source[j] === "$" && source[j + 1] === "{") return { end: j + 2, closed: false, value, plain: false };
      value += source[j++];
    }
    return { end: j, closed: true, value, plain: true };
  };
  /** The last characters written, blanks at the end left out. */
  const previousSignificant = (): string => {
    let k = out.length - 1;
    while (k >= 0 && /\s/.test(out[k]!)) k--;
    return out.slice(Math.max(0, k - 15), k + 1);
  };
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      push(blank(source.slice(i, stop)));
      i = stop;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      push(blank(source.slice(i, stop)));
      i = stop;
    } else if (c === "'" || c === '"') {
      i = quoted(c);
    } else if (c === "`") {
      const text = templateText(i + 1);
      literals.set(i, text.plain ? text.value : null);
      push("`", body(i + 1, text.end - (text.closed ? 1 : 2)), text.closed ? "`" : "${");
      if (!text.closed) templates.push(depth);
      i = text.end;
    } else if (c === "}" && templates.length > 0 && templates[templates.length - 1] === depth) {
      templates.pop();
      const text = templateText(i + 1);
      push("}", body(i + 1, text.end - (text.closed ? 1 : 2)), text.closed ? "`" : "${");
      if (!text.closed) templates.push(depth);
      i = text.end;
    } else if (c === "/") {
      const before = previousSignificant();
      const last = before[before.length - 1];
      if (last === undefined || beforeRegex.has(last) || regexKeywords.test(before)) {
        let j = i + 1;
        let inClass = false;
        while (j < source.length && source[j] !== "\n") {
          if (source[j] === "\\") { j += 2; continue; }
          if (source[j] === "[") inClass = true;
          else if (source[j] === "]") inClass = false;
          else if (source[j] === "/" && !inClass) break;
          j++;
        }
        push("/", body(i + 1, j), "/");
        i = j + 1;
      } else {
        push(c);
        i++;
      }
    } else {
      if (c === "{") depth++;
      else if (c === "}") depth--;
      push(c);
      i++;
    }
  }
  return { code: out, literals };
}

/** The string literal whose opening quote is at `at` in the masked code,
 * followed (after blanks) by `)` or `,`: its value; otherwise null. */
function literalArgument(masked: Masked, at: number): string | null {
  const value = masked.literals.get(at);
  if (value === undefined || value === null) return null;
  const quote = masked.code[at]!;
  const close = masked.code.indexOf(quote, at + 1);
  return /^\s*[),]/.test(masked.code.slice(close + 1)) ? value : null;
}

/** Whether the call whose `(` is at `open` is followed, after its `)`, by
 * `:` or `{`: a method named `import`/`require` being defined, not called. */
function isMethodDefinition(code: string, open: number): boolean {
  let level = 0;
  for (let j = open; j < code.length; j++) {
    if (code[j] === "(") level++;
    else if (code[j] === ")" && --level === 0) return /^\s*[:{]/.test(code.slice(j + 1));
  }
  return false;
}

/** Every import of `source`, in source order. */
export function importsOf(source: string): FoundImport[] {
  const masked = mask(source);
  const { code } = masked;
  const found: { at: number; form: ImportForm; specifier: string | null; typeOnly: boolean }[] = [];
  const lineAt = (at: number) => code.slice(0, at).split("\n").length;

  // Static: `import ... from "x"`, `import "x"`, `export ... from "x"`
  // (with or without `type`), each at the start of a statement.
  const statement = /(?:^|[;{}\n])\s*(?:import|export)\b(\s+type\b)?([^;"'`]*?)(["'])/g;
  for (const match of code.matchAll(statement)) {
    const typeOnly = match[1] !== undefined;
    const clause = match[2]!;
    const quoteAt = match.index! + match[0].length - 1;
    const head = match[0].trimStart().replace(/^[;{}\n]\s*/, "");
    const isImport = head.startsWith("import");
    const fromClause = /\bfrom\s*$/.test(clause);
    const bare = isImport && clause.trim() === "";
    if (head.startsWith("import(") || /^import\s*\(/.test(head) || /^import\s*\./.test(head)) continue;
    if (fromClause || bare) found.push({ at: quoteAt, form: "static", specifier: masked.literals.get(quoteAt) ?? null, typeOnly });
  }
  // Dynamic: `import(...)`, in code or in a type; not `x.import(...)`.
  for (const match of code.matchAll(/(?<![\w$.#])import\s*\(/g)) {
    const open = match.index! + match[0].length - 1;
    if (isMethodDefinition(code, open)) continue;
    const argument = /^\s*/.exec(code.slice(open + 1))![0].length + open + 1;
    found.push({ at: match.index!, form: "dynamic", specifier: literalArgument(masked, argument), typeOnly: false });
  }
  // `require(...)`, `import.meta.require(...)`; not `x.require(...)`.
  for (const match of code.matchAll(/(?:(?<![\w$.#])import\s*\.\s*meta\s*\.\s*|(?<![\w$.#]))require\s*\(/g)) {
    const open = match.index! + match[0].length - 1;
    if (isMethodDefinition(code, open)) continue;
    const argument = /^\s*/.exec(code.slice(open + 1))![0].length + open + 1;
    found.push({ at: match.index!, form: "require", specifier: literalArgument(masked, argument), typeOnly: false });
  }
  return found.sort((a, b) => a.at - b.at).map(({ at, form, specifier, typeOnly }) => ({ form, specifier, typeOnly, line: lineAt(at) }));
}
