import Foundation

/// Writes a file so that a reader sees either no file or a complete one: a temp file beside
/// the target, fsync, rename. Every file recbench writes goes through here.
public enum AtomicWrite {
    /// Writes `data` to `path` atomically, creating its folder if needed.
    public static func write(_ data: Data, to path: String) throws {
        try stream(to: path) { out in try out(Array(data)) }
    }

    /// Writes to `path` atomically whatever `body` hands its writer, chunk by chunk, so a
    /// file larger than memory can be produced; nothing appears at `path` unless `body`
    /// returns and every byte reached the disk.
    public static func stream(to path: String, _ body: (_ write: ([UInt8]) throws -> Void) throws -> Void) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if let file = firstFile(along: directory) {
            throw RecBenchError.file(path, "cannot be written: \(file) is a file, not a folder")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
        } catch {
            throw RecBenchError.file(directory, "cannot create the folder for \((path as NSString).lastPathComponent) (\(error.localizedDescription))")
        }
        removeStaleTemporaries(of: path)
        let temp = "\(directory.isEmpty ? "." : directory)/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw RecBenchError.file(temp, "cannot be created (\(String(cString: strerror(errno))))") }
        let failure = { (code: Int32) in RecBenchError.file(path, "cannot be written (\(String(cString: strerror(code))))") }
        do {
            try body { bytes in
                // errno is read here, before close / unlink can overwrite it.
                let code: Int32? = bytes.withUnsafeBytes { raw in
                    var offset = 0
                    while offset < raw.count {
                        let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                        if n <= 0 { return n < 0 ? errno : ENOSPC }
                        offset += n
                    }
                    return nil
                }
                if let code { throw failure(code) }
            }
            if fsync(fd) != 0 { throw failure(errno) }
        } catch {
            close(fd)
            unlink(temp)
            throw error
        }
        if close(fd) != 0 { let code = errno; unlink(temp); throw failure(code) }
        if rename(temp, path) != 0 { let code = errno; unlink(temp); throw failure(code) }
    }

    /// Deletes `path` and any temp file a killed writer of it left (a failure record that a
    /// later success makes obsolete).
    public static func remove(_ path: String) {
        unlink(path)
        removeStaleTemporaries(of: path)
    }

    /// Deletes the temp files an earlier writer of `path` left when it was killed between
    /// creating and renaming one (`.<name>.<pid>.tmp` whose process no longer exists), so a
    /// resumed sweep leaves none behind. A live writer's temp file is left alone.
    static func removeStaleTemporaries(of path: String) {
        let directory = (path as NSString).deletingLastPathComponent, name = (path as NSString).lastPathComponent
        let folder = directory.isEmpty ? "." : directory
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for entry in entries where entry.hasPrefix(".\(name).") && entry.hasSuffix(".tmp") {
            let pidText = entry.dropFirst(name.count + 2).dropLast(4)
            guard let pid = pid_t(pidText), pid != getpid(), !isAlive(pid) else { continue }
            unlink("\(folder)/\(entry)")
        }
    }

    /// Whether process `pid` is running: it exists (signal 0 probes without sending) and is
    /// not a zombie waiting to be reaped (a killed writer can linger as one).
    public static func isAlive(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return true }
        let state = stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first
        return state != "Z" && state != "X"
    }

    /// The first existing path along `directory` that is a file, not a folder (so the
    /// folder cannot be created), or nil.
    static func firstFile(along directory: String) -> String? {
        var prefix = ""
        for component in (directory as NSString).pathComponents {
            prefix = prefix.isEmpty ? component : (prefix as NSString).appendingPathComponent(component)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: prefix, isDirectory: &isFolder), !isFolder.boolValue { return prefix }
        }
        return nil
    }
}
