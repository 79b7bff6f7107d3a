/**
 * Checks that a module's public API is explicitly typed and documented,
 * with the TypeScript compiler API (the pinned `typescript`):
 *
 * - every export has a doc comment, and so has every public member of an
 *   exported class (except overrides, setters and `[Symbol.*]` protocol
 *   members, documented where they are declared first);
 * - exported functions, and public methods and getters of exported
 *   classes, declare their return types; exported variables and public
 *   properties declare their types unless a literal initializer says it;
 * - option objects are named types: a parameter of a public function,
 *   method or constructor is not an inline object type;
 * - every named type of this project that a public signature mentions
 *   (parameters, return types, property types) is exported too, so that
 *   callers can name what they pass and get.
 *
 * "Public" is what the entry module exports; names starting with `_` or
 * `#`, private or protected members, and members tagged `@internal` are
 * not public.
 */
import ts from "typescript";
import { relative, resolve } from "node:path";

const root = resolve(import.meta.dir, "..", "..");

/** The compiler options of tsconfig.json (its `include` is not used). */
function compilerOptions(): ts.CompilerOptions {
  const configPath = resolve(root, "tsconfig.json");
  const config = ts.readConfigFile(configPath, ts.sys.readFile);
  if (config.error) throw new Error(ts.flattenDiagnosticMessageText(config.error.messageText, "\n"));
  return ts.parseJsonConfigFileContent(config.config, ts.sys, root).options;
}

function isOurs(node: ts.Node, ownDir: string): boolean {
  const file = node.getSourceFile().fileName;
  return !file.includes("/node_modules/") && resolve(file).startsWith(ownDir);
}

function where(node: ts.Node): string {
  const file = node.getSourceFile();
  const { line } = file.getLineAndCharacterOfPosition(node.getStart());
  return `${relative(root, file.fileName)}:${line + 1}`;
}

function hasDoc(node: ts.Node): boolean {
  // A variable's doc comment sits on its statement.
  const target = ts.isVariableDeclaration(node) ? node.parent.parent : node;
  return ts.getJSDocCommentsAndTags(target).some((doc) => ts.isJSDoc(doc));
}

function isInternal(node: ts.Node): boolean {
  return ts.getJSDocTags(node).some((tag) => tag.tagName.text === "internal");
}

function isPublicMember(member: ts.ClassElement): boolean {
  if (isInternal(member)) return false;
  if (!member.name || ts.isPrivateIdentifier(member.name)) return false;
  if (member.name.getText().startsWith("_")) return false;
  const modifiers = ts.canHaveModifiers(member) ? ts.getModifiers(member) ?? [] : [];
  return !modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
}

/** A member whose meaning is documented elsewhere: an override (the base
 * documents it), a setter (its getter does), or a protocol member such as
 * `[Symbol.dispose]` or `[Symbol.iterator]`. */
function inheritsDoc(member: ts.ClassElement): boolean {
  if (ts.isSetAccessorDeclaration(member)) return true;
  if (member.name && ts.isComputedPropertyName(member.name) && member.name.expression.getText().startsWith("Symbol.")) return true;
  const modifiers = ts.canHaveModifiers(member) ? ts.getModifiers(member) ?? [] : [];
  return modifiers.some((m) => m.kind === ts.SyntaxKind.OverrideKeyword);
}

/** An initializer whose type a reader sees at once. */
function isLiteral(expression: ts.Expression | undefined): boolean {
  if (!expression) return false;
  if (ts.isAsExpression(expression) && expression.type.getText() === "const") return true;
  return ts.isNumericLiteral(expression) || ts.isStringLiteral(expression) || ts.isNoSubstitutionTemplateLiteral(expression)
    || expression.kind === ts.SyntaxKind.TrueKeyword || expression.kind === ts.SyntaxKind.FalseKeyword
    || (ts.isPrefixUnaryExpression(expression) && ts.isNumericLiteral(expression.operand));
}

type Signature = ts.FunctionDeclaration | ts.MethodDeclaration | ts.ConstructorDeclaration | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration | ts.MethodSignature | ts.FunctionTypeNode | ts.ConstructorTypeNode | ts.CallSignatureDeclaration;

/** The exports of `entry` in `program`, aliases resolved. */
function exportsOf(program: ts.Program, entry: string): ts.Symbol[] {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(resolve(root, entry));
  if (!source) throw new Error(`${entry} is not in the program`);
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (!moduleSymbol) throw new Error(`${entry} is not a module`);
  return checker.getExportsOfModule(moduleSymbol);
}

/**
 * The problems of the public API of `entry` (a path relative to the
 * repository root), one line each, naming the file and line.
 */
export function publicApiProblems(entry: string, ownDir = resolve(root, "ts")): string[] {
  return packageApiProblems([entry], ownDir)[entry]!;
}

/**
 * The problems of each entry point of a package (paths relative to the
 * repository root), checked in one program. A type that a public
 * signature mentions may be exported by any of the entry points: a caller
 * of the everyday API can import an advanced type from its subpath.
 */
export function packageApiProblems(entries: string[], ownDir = resolve(root, "ts")): Record<string, string[]> {
  const program = ts.createProgram(entries.map((entry) => resolve(root, entry)), compilerOptions());
  const checker = program.getTypeChecker();
  const named = new Set<ts.Symbol>();
  for (const entry of entries) {
    for (const symbol of exportsOf(program, entry)) named.add(symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
  }
  const result: Record<string, string[]> = {};
  for (const entry of entries) result[entry] = entryProblems(program, entry, ownDir, named, entries.length > 1 ? "any entry point" : entry);
  return result;
}

function entryProblems(program: ts.Program, entry: string, ownDir: string, exported: Set<ts.Symbol>, exportedFrom: string): string[] {
  const checker = program.getTypeChecker();
  const problems: string[] = [];
  const publicDeclarations: [string, ts.Declaration][] = [];
  for (const symbol of exportsOf(program, entry)) {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const declarations = target.declarations ?? [];
    for (const declaration of declarations) {
      // The implementation of an overloaded function is not callable as such.
      const isImplementation = ts.isFunctionDeclaration(declaration) && declaration.body !== undefined && declarations.length > 1;
      if (isOurs(declaration, ownDir) && !isImplementation) publicDeclarations.push([symbol.name, declaration]);
    }
  }

  const mentioned = new Map<ts.Symbol, string>();
  /** Records the project's named types that `type` mentions. */
  const visitType = (type: ts.TypeNode | undefined, from: string): void => {
    if (!type) return;
    const visit = (node: ts.Node): void => {
      if (ts.isTypeReferenceNode(node) || ts.isExpressionWithTypeArguments(node)) {
        const name = ts.isTypeReferenceNode(node) ? node.typeName : node.expression;
        let symbol = checker.getSymbolAtLocation(name);
        if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
        const declaration = symbol?.declarations?.[0];
        if (symbol && declaration && isOurs(declaration, ownDir) && !ts.isTypeParameterDeclaration(declaration) && !mentioned.has(symbol)) {
          mentioned.set(symbol, from);
        }
      }
      if (ts.isTypeQueryNode(node)) return; // `typeof x` names a value
      ts.forEachChild(node, visit);
    };
    visit(type);
  };
  const visitSignature = (signature: Signature, name: string, needsReturnType: boolean): void => {
    for (const parameter of signature.parameters) {
      if (parameter.type && ts.isTypeLiteralNode(parameter.type)) {
        problems.push(`${where(parameter)} ${name}: parameter ${parameter.name.getText()} has an inline object type; name it and export it`);
      }
      visitType(parameter.type, name);
    }
    if (needsReturnType && !signature.type) problems.push(`${where(signature)} ${name}: no explicit return type`);
    visitType(signature.type, name);
  };

  for (const [name, declaration] of publicDeclarations) {
    if (!hasDoc(declaration)) problems.push(`${where(declaration)} ${name}: no doc comment`);
    if (ts.isFunctionDeclaration(declaration)) {
      visitSignature(declaration, name, true);
    } else if (ts.isVariableDeclaration(declaration)) {
      if (!declaration.type && !isLiteral(declaration.initializer)) problems.push(`${where(declaration)} ${name}: no explicit type`);
      visitType(declaration.type, name);
    } else if (ts.isTypeAliasDeclaration(declaration)) {
      visitType(declaration.type, name);
    } else if (ts.isInterfaceDeclaration(declaration)) {
      for (const member of declaration.members) {
        if (ts.isPropertySignature(member)) visitType(member.type, `${name}.${member.name.getText()}`);
        else if (ts.isMethodSignature(member)) visitSignature(member, `${name}.${member.name.getText()}`, true);
      }
    } else if (ts.isClassDeclaration(declaration)) {
      for (const clause of declaration.heritageClauses ?? []) for (const type of clause.types) visitType(type, name);
      for (const member of declaration.members) {
        if (ts.isConstructorDeclaration(member)) {
          // Parameter properties (`readonly x: T`) are public members.
          for (const parameter of member.parameters) {
            const modifiers = ts.getModifiers(parameter) ?? [];
            const isProperty = modifiers.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword || m.kind === ts.SyntaxKind.PublicKeyword);
            const hidden = modifiers.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
            if (!isProperty || hidden) continue;
            if (!parameter.type) problems.push(`${where(parameter)} ${name}.${parameter.name.getText()}: no explicit type`);
            visitType(parameter.type, `${name}.${parameter.name.getText()}`);
          }
          const hidden = ts.getModifiers(member)?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
          if (!hidden && !isInternal(member)) visitSignature(member, `new ${name}`, false);
          continue;
        }
        if (!isPublicMember(member)) continue;
        const memberName = `${name}.${member.name!.getText()}`;
        if (!hasDoc(member) && !inheritsDoc(member)) problems.push(`${where(member)} ${memberName}: no doc comment`);
        if (ts.isMethodDeclaration(member) || ts.isGetAccessorDeclaration(member)) {
          visitSignature(member, memberName, true);
        } else if (ts.isSetAccessorDeclaration(member)) {
          visitSignature(member, memberName, false);
        } else if (ts.isPropertyDeclaration(member)) {
          if (!member.type && !isLiteral(member.initializer)) problems.push(`${where(member)} ${memberName}: no explicit type`);
          visitType(member.type, memberName);
        }
      }
    }
  }

  for (const [symbol, from] of mentioned) {
    if (exported.has(symbol)) continue;
    const declaration = symbol.declarations![0];
    problems.push(`${where(declaration)} ${symbol.name}: used by the public ${from} but not exported from ${exportedFrom}`);
  }
  return problems;
}

/** Signature text, on one line, without truncation. */
const flat = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.WriteArrowStyleSignature;

/** `text` without the checker's `import("/abs/path").` qualifiers (they
 * name files on this machine). */
function portable(text: string): string {
  return text.replace(/import\("[^"]+"\)\./g, "");
}

/** Whether `symbol` is a public member (see isPublicMember). */
function isPublicSymbol(symbol: ts.Symbol): boolean {
  if (symbol.name.startsWith("_") || symbol.name.startsWith("#") || symbol.name === "prototype") return false;
  const declarations = symbol.declarations ?? [];
  return declarations.every((declaration) => !ts.isClassElement(declaration) || isPublicMember(declaration));
}

/** One line per public member of a class instance or constructor type
 * declared in this project (what Error or Object declare is left out). */
function memberLines(checker: ts.TypeChecker, type: ts.Type, prefix: string, at: ts.Node): string[] {
  const lines: string[] = [];
  const ownDir = resolve(root, "ts");
  for (const member of checker.getPropertiesOfType(type)) {
    if (!isPublicSymbol(member)) continue;
    if (!(member.declarations ?? []).some((declaration) => isOurs(declaration, ownDir))) continue;
    const memberType = checker.getTypeOfSymbolAtLocation(member, at);
    const calls = memberType.getCallSignatures();
    const isMethod = (member.flags & ts.SymbolFlags.Method) !== 0;
    if (isMethod && calls.length > 0) {
      for (const signature of calls) lines.push(`  ${prefix}${member.name}${checker.signatureToString(signature, at, flat)}`);
    } else {
      const declaration = member.declarations?.[0];
      const readonly = (declaration !== undefined && (ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Readonly) !== 0)
        || ((member.flags & ts.SymbolFlags.GetAccessor) !== 0 && (member.flags & ts.SymbolFlags.SetAccessor) === 0);
      lines.push(`  ${prefix}${readonly ? "readonly " : ""}${member.name}: ${checker.typeToString(memberType, at, flat)}`);
    }
  }
  return lines.sort();
}

/**
 * The public surface of each entry point (paths relative to the
 * repository root), as text: one block per export, sorted by name, giving
 * its kind and its signatures as the type checker prints them (functions:
 * every overload; classes: constructor, static and instance members;
 * constants: their type; types: their definition). Compared against a
 * committed snapshot, so that any change to the surface is a visible diff.
 */
export function apiSnapshot(entries: string[]): Record<string, string[]> {
  const program = ts.createProgram(entries.map((entry) => resolve(root, entry)), compilerOptions());
  const checker = program.getTypeChecker();
  const result: Record<string, string[]> = {};
  for (const entry of entries) {
    const lines: string[] = [];
    const symbols = [...exportsOf(program, entry)].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const symbol of symbols) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const declaration = target.declarations?.[0];
      if (!declaration) throw new Error(`${entry}: ${symbol.name} has no declaration`);
      // `export { type X }` of a class exports its instance type only.
      const typeOnly = (symbol.declarations ?? []).some((node) => ts.isTypeOnlyImportOrExportDeclaration(node));
      if (target.flags & ts.SymbolFlags.Class) {
        const instance = checker.getDeclaredTypeOfSymbol(target);
        const constructor = checker.getTypeOfSymbolAtLocation(target, declaration);
        const bases = (instance as ts.InterfaceType).getBaseTypes?.() ?? [];
        const heritage = bases.length > 0 ? ` extends ${bases.map((base) => checker.typeToString(base, declaration, flat)).join(", ")}` : "";
        lines.push(typeOnly ? `type ${symbol.name} = instance of class ${symbol.name}${heritage}` : `class ${symbol.name}${heritage}`);
        if (!typeOnly) {
          for (const signature of constructor.getConstructSignatures()) lines.push(`  new${checker.signatureToString(signature, declaration, flat)}`);
          lines.push(...memberLines(checker, constructor, "static ", declaration));
        }
        lines.push(...memberLines(checker, instance, ".", declaration));
      } else if (target.flags & ts.SymbolFlags.Function) {
        const type = checker.getTypeOfSymbolAtLocation(target, declaration);
        for (const signature of type.getCallSignatures()) lines.push(`function ${symbol.name}${checker.signatureToString(signature, declaration, flat)}`);
      } else if (target.flags & ts.SymbolFlags.Variable) {
        lines.push(`const ${symbol.name}: ${checker.typeToString(checker.getTypeOfSymbolAtLocation(target, declaration), declaration, flat)}`);
      } else if (target.flags & (ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Interface)) {
        const parameters = ts.isTypeAliasDeclaration(declaration) || ts.isInterfaceDeclaration(declaration)
          ? (declaration.typeParameters ?? []).map((parameter) => parameter.getText()).join(", ")
          : "";
        const definition = ts.isTypeAliasDeclaration(declaration)
          ? checker.typeToString(checker.getTypeFromTypeNode(declaration.type), declaration, flat | ts.TypeFormatFlags.InTypeAlias)
          : checker.typeToString(checker.getDeclaredTypeOfSymbol(target), declaration, flat | ts.TypeFormatFlags.InTypeAlias);
        lines.push(`type ${symbol.name}${parameters ? `<${parameters}>` : ""} = ${definition.replace(/\s+/g, " ")}`);
      } else {
        lines.push(`${symbol.name}: unknown kind ${ts.SymbolFlags[target.flags] ?? target.flags}`);
      }
    }
    result[entry] = lines.map(portable);
  }
  return result;
}
