//! Build steps (run through scripts/, which pass `--prefix .`):
//!   zig build            the library into lib/<platform>/, test fixtures
//!                        into build/fixtures/
//!   zig build test       Zig unit tests
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
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{ .preferred_optimize_mode = .ReleaseSafe });

    const library = addLibrary(b, target, optimize);
    // lib/<platform>, spelled as Bun's process.platform-process.arch.
    const platform = b.fmt("{s}-{s}", .{
        switch (target.result.os.tag) {
            .linux => "linux",
            .macos => "darwin",
            else => @tagName(target.result.os.tag),
        },
        switch (target.result.cpu.arch) {
            .x86_64 => "x64",
            .aarch64 => "arm64",
            else => @tagName(target.result.cpu.arch),
        },
    });
    const install_library = b.addInstallArtifact(library, .{
        .dest_dir = .{ .override = .{ .custom = b.fmt("lib/{s}", .{platform}) } },
    });
    b.getInstallStep().dependOn(&install_library.step);

    // The optional CPython shim of `bun-arrow-device/python`, beside the
    // library. It links neither libpython nor the library: both are opened
    // at run time (native/abd_python.c).
    const python_shim = addPythonShim(b, target, optimize);
    const install_python_shim = b.addInstallArtifact(python_shim, .{
        .dest_dir = .{ .override = .{ .custom = b.fmt("lib/{s}", .{platform}) } },
    });
    b.getInstallStep().dependOn(&install_python_shim.step);

    addFixtures(b, target, optimize);
    addExamples(b, target, optimize);

    const unit_tests = b.addTest(.{ .root_module = rootModule(b, target, .Debug) });
    const run_unit_tests = b.addRunArtifact(unit_tests);
    run_unit_tests.has_side_effects = true; // always run, so the test count is always reported
    const test_step = b.step("test", "Run the Zig unit tests");
    test_step.dependOn(&run_unit_tests.step);
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
    module.addCSourceFile(.{ .file = b.path("native/abd_python.c"), .flags = &.{ "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread" } });
    module.addIncludePath(b.path("lib/include"));
    return b.addLibrary(.{ .linkage = .dynamic, .name = "arrow_device_python", .root_module = module });
}

/// C fixtures the Bun tests load: each test/fixtures/<name>.c becomes
/// build/fixtures/lib<name>.so, compiled against lib/include.
fn addFixtures(b: *std.Build, target: std.Build.ResolvedTarget, optimize: std.builtin.OptimizeMode) void {
    const fixtures = [_][]const u8{ "c_peer", "layout_probe", "owners_peer", "c_producer", "stream_peer", "async_peer", "fake_cuda", "fake_cuda_incomplete", "fake_hip", "duckdb_thread" };
    for (fixtures) |name| {
        const module = b.createModule(.{ .target = target, .optimize = optimize, .link_libc = true });
        module.addCSourceFile(.{ .file = b.path(b.fmt("test/fixtures/{s}.c", .{name})), .flags = &.{ "-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread" } });
        module.addIncludePath(b.path("lib/include"));
        const fixture = b.addLibrary(.{ .linkage = .dynamic, .name = name, .root_module = module });
        const install = b.addInstallArtifact(fixture, .{ .dest_dir = .{ .override = .{ .custom = "build/fixtures" } } });
        b.getInstallStep().dependOn(&install.step);
    }
}
