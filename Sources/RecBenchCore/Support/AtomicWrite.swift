import Foundation

/// Writes a file so that a reader sees either no file or a complete one: a temp file beside
/// the target, fsync, rename. Every file recbench writes goes through here.
public enum AtomicWrite {
    /// Writes `data` to `path` atomically, creating its folder if needed.
    public static func write(_ data: Data, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if let file = firstFile(along: directory) {
            throw RecBenchError.file(path, "cannot be written: \(file) is a file, not a folder")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
        } catch {
            throw RecBenchError.file(directory, "cannot create the folder for \((path as NSString).lastPathComponent) (\(error.localizedDescription))")
        }
        let temp = "\(directory.isEmpty ? "." : directory)/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw RecBenchError.file(temp, "cannot be created (\(String(cString: strerror(errno))))") }
        // The first failing call's errno, read before close / unlink can overwrite it.
        var failure: Int32? = data.withUnsafeBytes { raw -> Int32? in
            var offset = 0
            while offset < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n <= 0 { return n < 0 ? errno : ENOSPC }
                offset += n
            }
            return nil
        }
        if failure == nil && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == nil { failure = errno }
        if failure == nil && rename(temp, path) != 0 { failure = errno }
        if let failure {
            unlink(temp)
            throw RecBenchError.file(path, "cannot be written (\(String(cString: strerror(failure))))")
        }
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
