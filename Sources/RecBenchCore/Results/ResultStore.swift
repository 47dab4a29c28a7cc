import Foundation

/// One JSON file per run under `results_dir/<dataset>/`, written atomically (temp file,
/// fsync, rename): a reader sees either no file or a complete one.
public struct ResultStore: Sendable {
    /// The results root folder.
    public let root: String

    /// A store rooted at `root`.
    public init(root: String) { self.root = root }

    /// Where `result` is (or would be) stored.
    public func path(for result: RunResult) -> String {
        path(dataset: result.dataset, model: result.model, runKey: result.runKey)
    }

    /// Where the run with this key is stored.
    public func path(dataset: String, model: String, runKey: String) -> String {
        "\(root)/\(dataset)/\(model)-\(runKey.prefix(16)).json"
    }

    /// Writes `result` atomically and returns its path. Per-user values, when given, are
    /// written first (to `<record>.peruser.json`), so a stored record always has them.
    @discardableResult
    public func save(_ result: RunResult, perUser: PerUserResults? = nil) throws -> String {
        let path = path(for: result)
        if let perUser {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try ResultStore.writeAtomically(try encoder.encode(perUser), to: PerUserResults.path(forResult: path))
        }
        try ResultStore.writeAtomically(try ResultStore.encode(result), to: path)
        return path
    }

    /// Reads a stored result.
    public func load(_ path: String) throws -> RunResult {
        guard let data = FileManager.default.contents(atPath: path) else { throw RecBenchError.file(path, "cannot be read") }
        do { return try JSONDecoder().decode(RunResult.self, from: data) } catch {
            throw RecBenchError.file(path, "is not a recbench result (\(error))")
        }
    }

    /// Pretty, key-sorted JSON for `result`.
    public static func encode(_ result: RunResult) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(result)
        data.append(0x0A)
        return data
    }

    /// Writes `data` to a temp file beside `path`, syncs it, and renames it over `path`.
    public static func writeAtomically(_ data: Data, to path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: directory.isEmpty ? "." : directory, withIntermediateDirectories: true)
        } catch {
            throw RecBenchError.file(directory, "cannot create the results folder (\(error.localizedDescription))")
        }
        let temp = "\(directory.isEmpty ? "." : directory)/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { throw RecBenchError.file(temp, "cannot be created (errno \(errno))") }
        var ok = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
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
