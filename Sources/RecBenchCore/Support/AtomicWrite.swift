import Foundation

/// Writes a file so that a reader sees either no file or a complete one: a temp file beside
/// the target, fsync, rename. Every file recbench writes goes through here.
public enum AtomicWrite {
    /// Writes `data` to `path` atomically, creating its folder if needed.
    public static func write(_ data: Data, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
        } catch {
            throw RecBenchError.file(directory, "cannot create the folder for \((path as NSString).lastPathComponent) (\(error.localizedDescription))")
        }
        let temp = "\(directory.isEmpty ? "." : directory)/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw RecBenchError.file(temp, "cannot be created (errno \(errno))") }
        var ok = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        close(fd)
        guard ok, rename(temp, path) == 0 else {
            unlink(temp)
            throw RecBenchError.file(path, "cannot be written (errno \(errno))")
        }
    }
}
