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
            let reason = String(cString: strerror(errno))
            unlink(temp)
            throw RecBenchError.file(path, "cannot be written (\(reason))")
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
