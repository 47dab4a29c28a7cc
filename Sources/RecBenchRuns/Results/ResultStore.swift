import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// Every file one run writes, named here and nowhere else: under `results_dir/<dataset>/`,
/// `<model>-<first 16 hex digits of the run key>` followed by the file's suffix.
public struct RunFiles: Sendable, Hashable {
    /// What a file in a results folder is.
    public enum Kind: String, Sendable, CaseIterable {
        case record = ".json", perUser = ".peruser.json", failure = ".failed.json", usersCSV = ".users.csv", usersJSONLines = ".users.jsonl"
        /// Each evaluated row's ranked list (`run --save-lists`).
        case lists = ".lists.csv"
        /// A learned model's training state while it trains (`resume_interval`), gone once the record is stored.
        case training = ".training"
    }

    /// The path of every file without its suffix.
    public let stem: String

    /// The folder beside a dataset's runs that holds its searches' trials (`recbench tune`):
    /// trials are not runs a report lists.
    public static let searchFolder = "tune"

    /// The files of a run stored under `root`.
    public init(root: String, dataset: String, model: String, runKey: String) {
        stem = "\(root)/\(dataset)/\(model)-\(runKey.prefix(16))"
    }

    /// The files of the run whose record is at `recordPath`.
    public init(record recordPath: String) { stem = String(recordPath.dropLast(Kind.record.rawValue.count)) }

    /// The path of the run's file of `kind`.
    public func path(_ kind: Kind) -> String { stem + kind.rawValue }
    /// The run record (the commit point: a run is done when it exists).
    public var record: String { path(.record) }
    /// Per-user values, written before the record.
    public var perUser: String { path(.perUser) }
    /// The failure record of a run that did not finish.
    public var failure: String { path(.failure) }

    /// What the file at `path` is, by its suffix (the longest that matches).
    public static func kind(of path: String) -> Kind? {
        Kind.allCases.filter { path.hasSuffix($0.rawValue) }.max { $0.rawValue.count < $1.rawValue.count }
    }
}

/// One JSON file per run under `results_dir/<dataset>/`, written atomically (temp file,
/// fsync, rename): a reader sees either no file or a complete one. Every file a run writes
/// is named by `RunFiles`.
public struct ResultStore: Sendable {
    /// The results root folder.
    public let root: String

    /// A store rooted at `root`.
    public init(root: String) { self.root = root }

    /// The files of `result`.
    public func files(for result: RunResult) -> RunFiles {
        RunFiles(root: root, dataset: result.dataset, model: result.model, runKey: result.runKey)
    }

    /// Where `result` is (or would be) stored.
    public func path(for result: RunResult) -> String { files(for: result).record }

    /// Writes `result` atomically and returns its path. Per-user values and ranked lists, when given, are
    /// written first (to `<record>.peruser.json`, `<record>.lists.csv`), so a stored record always has them; lists
    /// left by an earlier run of the same key are removed when none are given (they would be another run's).
    @discardableResult
    public func save(_ result: RunResult, perUser: PerUserResults? = nil, lists: RecommendationLists? = nil) throws -> String {
        let files = files(for: result), path = files.record, sidecar = files.perUser
        if let perUser {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try AtomicWrite.write(try encoder.encode(perUser), to: sidecar)
        }
        if let lists { try AtomicWrite.write(Data(lists.csv().utf8), to: files.path(.lists)) }
        do {
            try AtomicWrite.write(try ResultStore.encode(result), to: path)
        } catch {
            // The record is the commit point: without it, its sidecars are a partial result.
            if !FileManager.default.fileExists(atPath: path) {
                if perUser != nil { unlink(sidecar) }
                if lists != nil { unlink(files.path(.lists)) }
            }
            throw error
        }
        if lists == nil { AtomicWrite.remove(files.path(.lists)) }
        AtomicWrite.remove(files.path(.training))   // the stored record supersedes it
        return path
    }

    /// Writes the test and valid per-user values of a run as `<record>.users.csv` and
    /// `.users.jsonl` (`run --per-user`), atomically; returns the two paths.
    public func exportPerUser(_ result: RunResult, perUser: PerUserResults, test: EvaluationResult) throws -> (csv: String, jsonLines: String) {
        let files = files(for: result)
        let keys = result.metricKeys.filter { test.perUser[$0] != nil }
        try AtomicWrite.write(Data(perUser.csv(keys: keys).utf8), to: files.path(.usersCSV))
        try AtomicWrite.write(Data(try perUser.jsonLines(keys: keys).utf8), to: files.path(.usersJSONLines))
        return (files.path(.usersCSV), files.path(.usersJSONLines))
    }

    /// Records that the run of `files` failed (atomically), for reports and resumed sweeps.
    public static func saveFailure(_ failure: FailedRun, to files: RunFiles) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try AtomicWrite.write(try encoder.encode(failure), to: files.failure)
    }

    /// Reads a stored result.
    public func load(_ path: String) throws -> RunResult {
        guard let data = FileManager.default.contents(atPath: path) else { throw RecBenchError.file(path, "cannot be read") }
        do { return try JSONDecoder().decode(RunResult.self, from: data) } catch {
            throw RecBenchError.file(path, "is not a recbench result (\(error))")
        }
    }

    /// Pretty, key-sorted JSON for `result` (every record the store's folders hold).
    public static func encode(_ result: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(result)
        data.append(0x0A)
        return data
    }
}
