//! Build steps (run through scripts/, which pass `--prefix .`):
//!   zig build            the library into lib/<platform-id>/, test fixtures
//!                        into build/fixtures/
//!   zig build test       Zig unit tests
//! Options:
//!   -Dtarget=<triple>    cross-compile (scripts/build-dist.sh does, for
//!                        every platform id; see docs/building.md)
//!   -Dfixtures=false     the library only (the C test fixtures are Linux
//!                        code: memfd, syscall, mallinfo2)
//!   -Dstrip=true         no debug info (release libraries)
//! Without -Dcpu the CPU is a baseline one even for a native build, so a
//! library built on this machine runs on any machine Bun runs on: x86-64-v2
//! (what Bun's own baseline build needs) for x64, the architecture's
//! baseline (generic armv8-a; Apple M1 on macOS) for arm64.
//! The Zig version is pinned in scripts/toolchain.env and checked here.

const std = @import("std");
const builtin = @import("builtin");

const toolchain_env = @embedFile("scripts/toolchain.env");

comptime {
    const wanted = pinnedZigVersion();
    if (!std.mem.eql(u8, wanted, builtin.zig_version_string))
        @compileError("this project is pinned to Zig " ++ wanted ++ " (scripts/toolchain.env) but this is Zig " ++ builtin.zig_version_string ++ "; run scripts/setup.sh");
}

fn pinnedZigVersion() []const u8 {
    var lines = std.mem.tokenizeScalar(u8, toolchain_env, '\n');
    while (lines.next()) |line| {
        if (std.mem.startsWith(u8, line, "ZIG_VERSION=")) return std.mem.trim(u8, line["ZIG_VERSION=".len..], " \r");
    }
    @compileError("scripts/toolchain.env has no ZIG_VERSION line");
}

pub fn build(b: *std.Build) void {
    const target = b.resolveTargetQuery(portableCpu(b.standardTargetOptionsQueryOnly(.{})));
    const optimize = b.standardOptimizeOption(.{ .preferred_optimize_mode = .ReleaseSafe });
    const with_fixtures = b.option(bool, "fixtures", "Build the C test fixtures into build/fixtures (default: true)") orelse true;
    const strip = b.option(bool, "strip", "Strip debug info from the library (default: false)") orelse false;

    if (target.result.os.tag == .windows) {
        // The library's thread, dynamic-loading and clock code is POSIX
        // (pthreads, dlopen, clock_gettime, posix_memalign); a Windows port
        // needs SRW locks, LoadLibraryA and friends first (docs/building.md).
        const unsupported = b.addFail("win32-x64 is not supported yet: libarrow_device uses POSIX threads, dlopen and clock_gettime, which Windows lacks (see docs/building.md)");
        b.getInstallStep().dependOn(&unsupported.step);
        return;
    }

    const library = addLibrary(b, target, optimize);
    library.root_module.strip = strip;
    const install_library = b.addInstallArtifact(library, .{
        .dest_dir = .{ .override = .{ .custom = b.fmt("lib/{s}", .{platformId(b, target.result)}) } },
        // Windows: only the .dll ships (no import library, no .pdb).
        .implib_dir = .disabled,
        .pdb_dir = .disabled,
    });
    b.getInstallStep().dependOn(&install_library.step);

    // The optional CPython shim of `bun-arrow-device/python`, beside the
    // library. It links neither libpython nor the library: both are opened
    // at run time (native/abd_python*.c).
    const python_shim = addPythonShim(b, target, optimize);
    python_shim.root_module.strip = strip;
    const install_python_shim = b.addInstallArtifact(python_shim, .{
        .dest_dir = .{ .override = .{ .custom = b.fmt("lib/{s}", .{platformId(b, target.result)}) } },
        .implib_dir = .disabled,
        .pdb_dir = .disabled,
    });
    b.getInstallStep().dependOn(&install_python_shim.step);

    if (with_fixtures) {
        addFixtures(b, target, optimize);
        addExamples(b, target, optimize);
    }

    const unit_tests = b.addTest(.{ .root_module = rootModule(b, target, .Debug) });
    const run_unit_tests = b.addRunArtifact(unit_tests);
    run_unit_tests.has_side_effects = true; // always run, so the test count is always reported
    const test_step = b.step("test", "Run the Zig unit tests");
    test_step.dependOn(&run_unit_tests.step);
}

/// The CPU to build for when -Dcpu is not given: a baseline one, never the
/// build machine's (its AVX-512 code would crash on other x64 machines).
fn portableCpu(query: std.Target.Query) std.Target.Query {
    var result = query;
    if (query.cpu_model != .determined_by_arch_os) return result; // -Dcpu given
    const arch = query.cpu_arch orelse builtin.cpu.arch;
    result.cpu_model = switch (arch) {
        .x86_64 => .{ .explicit = &std.Target.x86.cpu.x86_64_v2 },
        else => .baseline,
    };
    return result;
}

/// lib/<platform-id> and dist/native/<platform-id>: <os>-<arch>[-<libc>],
/// with os and arch spelled as Bun's process.platform and process.arch
/// (linux-x64-gnu, linux-arm64-musl, darwin-arm64, win32-x64, ...).
fn platformId(b: *std.Build, target: std.Target) []const u8 {
    const os = switch (target.os.tag) {
        .linux => "linux",
        .macos => "darwin",
        .windows => "win32",
        else => @tagName(target.os.tag),
    };
    const arch = switch (target.cpu.arch) {
        .x86_64 => "x64",
        .aarch64 => "arm64",
        else => @tagName(target.cpu.arch),
    };
    if (target.os.tag != .linux) return b.fmt("{s}-{s}", .{ os, arch });
    const libc = if (target.abi.isMusl()) "musl" else "gnu";
    return b.fmt("{s}-{s}-{s}", .{ os, arch, libc });
}

fn rootModule(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode) *std.Build.Module {
    return b.createModule(.{
        .root_source_file = b.path("zig/root.zig"),
        .target = target,
        .optimize = optimize,
        .link_libc = true,
    });
}

fn addLibrary(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode) *std.Build.Step.Compile {
    return b.addLibrary(.{
        .linkage = .dynamic,
        .name = "arrow_device",
        .root_module = rootModule(b, target, optimize),
    });
}

/// The examples' C libraries: each examples/c/<name>.c becomes
/// build/examples/lib<name>.so (examples/c_library.ts loads it).
fn addExamples(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode) void {
    const examples = [_][]const u8{"doubler"};
    for (examples) |name| {
        const module = b.createModule(.{ .target = target, .optimize = optimize, .link_libc = true });
        module.addCSourceFile(.{ .file = b.path(b.fmt("examples/c/{s}.c", .{name})), .flags = &.{ "-std=c11", "-Wall", "-Wextra", "-Werror" } });
        module.addIncludePath(b.path("lib/include"));
        const example = b.addLibrary(.{ .linkage = .dynamic, .name = name, .root_module = module });
        const install = b.addInstallArtifact(example, .{ .dest_dir = .{ .override = .{ .custom = "build/examples" } } });
        b.getInstallStep().dependOn(&install.step);
    }
}

fn addPythonShim(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode) *std.Build.Step.Compile {
    const module = b.createModule(.{ .target = target, .optimize = optimize, .link_libc = true });
    module.addCSourceFiles(.{
        .files = &.{ "native/abd_python.c", "native/abd_python_capsules.c", "native/abd_python_releases.c", "native/abd_python_sources.c", "native/abd_python_streams.c", "native/abd_python_import.c", "native/abd_python_export.c" },
        .flags = &.{ "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread" },
    });
    module.addIncludePath(b.path("lib/include"));
    return b.addLibrary(.{ .linkage = .dynamic, .name = "arrow_device_python", .root_module = module });
}

/// C fixtures the Bun tests load: each test/fixtures/<name>.c becomes
/// build/fixtures/lib<name>.so, compiled against lib/include.
fn addFixtures(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode) void {
    const fixtures = [_][]const u8{ "c_peer", "fake_adbc", "layout_probe", "owners_peer", "c_producer", "stream_peer", "async_peer", "fake_cuda", "fake_cuda_incomplete", "fake_cuda_10", "fake_hip", "duckdb_thread", "bench_floor" };
    for (fixtures) |name| {
        const module = b.createModule(.{ .target = target, .optimize = optimize, .link_libc = true });
        module.addCSourceFile(.{ .file = b.path(b.fmt("test/fixtures/{s}.c", .{name})), .flags = &.{ "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread" } });
        module.addIncludePath(b.path("lib/include"));
        const fixture = b.addLibrary(.{ .linkage = .dynamic, .name = name, .root_module = module });
        const install = b.addInstallArtifact(fixture, .{ .dest_dir = .{ .override = .{ .custom = "build/fixtures" } } });
        b.getInstallStep().dependOn(&install.step);
    }
}
