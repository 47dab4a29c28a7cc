import Foundation
import Linalg
import RecBenchSupport

/// Starting `recbench` itself as a child process (sweeps, benchmarks) without Foundation's
/// Process, so we get the child's rusage (peak RSS) and can wait for whichever ends first.
public enum ChildProcess {
    /// This executable's path.
    public static let selfPath = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path

    /// Starts `path` with `arguments`; stdout goes to `stdoutPath` (or /dev/null), stderr to
    /// `stderrPath` (or /dev/null); it runs in `directory` when given (a tool that writes
    /// into its working folder, like RecBole's logs and checkpoints). A recbench child is told
    /// this process's pid (`RECBENCH_PARENT_PID`) and ends when this process does: the kernel
    /// signals it when the thread that started it ends, so only the main thread starts children.
    /// Returns the pid.
    public static func start(_ path: String, _ arguments: [String], stderrPath: String? = nil, stdoutPath: String? = nil,
                      directory: String? = nil) throws -> pid_t {
        precondition(Thread.isMainThread, "ChildProcess.start: children are started from the main thread (their parent-death signal)")
        var pid: pid_t = 0
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        if let directory { _ = glibcSpawnChdir(&actions, directory) }
        // The child's environment plus this process's pid: a recbench child ends when this process does.
        let marker = "RECBENCH_PARENT_PID="
        var environment: [UnsafeMutablePointer<CChar>?] = [strdup(marker + String(getpid()))]
        var entry = environ
        while let variable = entry.pointee {
            if strncmp(variable, marker, marker.utf8.count) != 0 { environment.append(strdup(variable)) }
            entry += 1
        }
        environment.append(nil)
        defer { environment.forEach { free($0) } }
        guard posix_spawn(&pid, path, &actions, nil, argv, environment) == 0 else {
            throw RecBenchError(location: path, "cannot start a child process")
        }
        return pid
    }

    /// Waits for any child; returns its pid, exit code (128+signal when killed) and peak RSS in MiB.
    public static func waitAny() -> (pid: pid_t, status: Int32, peakMiB: Double) {
        var status: Int32 = 0
        var usage = rusage()
        let pid = wait4(-1, &status, 0, &usage)
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (pid, code, Double(usage.ru_maxrss) / 1024)
    }

    /// Runs one child to completion: wall seconds, peak RSS (MiB), exit code. The peak is
    /// rusage's, which also counts this process's resident pages (the child shares them
    /// between posix_spawn and exec): prefer a child's own report when it gives one.
    public static func run(_ path: String, _ arguments: [String], stdoutPath: String? = nil,
                    directory: String? = nil) throws -> (seconds: Double, peakMiB: Double, status: Int32) {
        let start = ContinuousClock.now
        let pid = try ChildProcess.start(path, arguments, stdoutPath: stdoutPath, directory: directory)
        var status: Int32 = 0
        var usage = rusage()
        wait4(pid, &status, 0, &usage)
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return ((ContinuousClock.now - start).seconds, Double(usage.ru_maxrss) / 1024, code)
    }
}

/// glibc's `posix_spawn_file_actions_addchdir_np` (2.29+; spawn.h declares it only for
/// _GNU_SOURCE, which Swift's Glibc module does not set).
@_silgen_name("posix_spawn_file_actions_addchdir_np")
func glibcSpawnChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32
