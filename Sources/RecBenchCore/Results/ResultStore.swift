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
        let path = path(for: result), sidecar = PerUserResults.path(forResult: path)
        if let perUser {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicWrite.write(try encoder.encode(perUser), to: sidecar)
        }
        do {
            try AtomicWrite.write(try ResultStore.encode(result), to: path)
        } catch {
            // The record is the commit point: without it, its sidecar is a partial result.
            if perUser != nil && !FileManager.default.fileExists(atPath: path) { unlink(sidecar) }
            throw error
        }
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
}
