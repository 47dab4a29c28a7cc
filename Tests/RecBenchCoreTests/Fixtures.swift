import Foundation
import RecBenchCore
import Linalg

/// Shared test helpers: temp folders, tiny atomic-file datasets, the shared reference data.
enum Fixtures {
    /// `../shared` beside the repository, when present (CI and developers have it; a user's
    /// clone does not, and tests that need it are skipped with a message).
    static let sharedRoot: String? = {
        let here = URL(fileURLWithPath: #filePath)   // …/Tests/RecBenchCoreTests/Fixtures.swift
        let repo = here.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let shared = repo.deletingLastPathComponent().appendingPathComponent("shared").path
        return FileManager.default.fileExists(atPath: shared + "/datasets/ml-100k/ml-100k.inter") ? shared : nil
    }()

    /// The repository root.
    static let repoRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// The test process's scratch folder, removed when the process exits (so `swift test`
    /// leaves nothing in the temp folder).
    static let scratchRoot: String = {
        let root = NSTemporaryDirectory() + "recbench-tests-\(getpid())"
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "recbench-tests-\(getpid())") }
        return root
    }()

    /// A fresh temporary folder inside the scratch folder.
    static func temporaryDirectory() -> String {
        let path = scratchRoot + "/" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Writes `{dir}/{name}/{name}.inter` with a user/item/timestamp header and these rows.
    @discardableResult
    static func writeInter(_ rows: [(String, String, Double)], name: String = "tiny", in dir: String) -> String {
        var text = "user_id:token\titem_id:token\ttimestamp:float\n"
        for (u, i, t) in rows { text += "\(u)\t\(i)\t\(t)\n" }
        let folder = "\(dir)/\(name)"
        try! FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try! text.write(toFile: "\(folder)/\(name).inter", atomically: true, encoding: .utf8)
        return folder
    }

    /// A config over a dataset in `dir` (data_path = dir), with extra YAML lines.
    static func config(dataset: String = "tiny", dataPath: String, extra: [String: ConfigValue] = [:]) throws -> Config {
        var values: [String: ConfigValue] = [
            "dataset": .string(dataset), "data_path": .string(dataPath),
            "load_col": .map(["inter": .list([.string("user_id"), .string("item_id"), .string("timestamp")])]),
            "eval_args": .map(["order": .string("TO")]),
        ]
        values.merge(extra) { _, new in new }
        return try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterNames)
    }

    /// A model of type `M` with `overrides` and its declared defaults for the rest.
    static func model<M: Recommender>(_ type: M.Type, _ overrides: [String: ConfigValue]) throws -> M {
        var values = overrides
        for p in M.parameters where values[p.name] == nil { values[p.name] = p.defaultValue }
        let config = try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterNames)
        return try M(parameters: ModelParameters(config: config, declared: M.parameters))
    }

    /// A deterministic random sparse 0/1 matrix.
    static func randomSparse(rows: Int, columns: Int, density: Double, seed: UInt64) -> SparseMatrix {
        var rng = SeededGenerator(seed: seed)
        var r = [Int32](), c = [Int32]()
        for i in 0..<rows {
            for j in 0..<columns where Double(rng.nextUnitFloat()) < density { r.append(Int32(i)); c.append(Int32(j)) }
        }
        return SparseMatrix(rows: rows, columns: columns, rowIndices: r, columnIndices: c)
    }

    /// A deterministic random dense matrix with entries in [-1, 1).
    static func randomMatrix(rows: Int, columns: Int, seed: UInt64) -> Matrix {
        var rng = SeededGenerator(seed: seed)
        return Matrix(rows: rows, columns: columns, values: (0..<(rows * columns)).map { _ in rng.nextUnitFloat() * 2 - 1 })
    }
}

/// A scorer with fixed scores per user (rows of a dense matrix), for evaluator tests.
struct FixedScorer: Scorer {
    let table: Matrix
    func scores(for users: ArraySlice<Int32>, into block: inout Matrix, compute: Compute) {
        for (r, u) in users.enumerated() {
            for j in 0..<table.columns { block[r, j] = table[Int(u), j] }
        }
    }
}

func close(_ a: Double, _ b: Double, _ tolerance: Double = 1e-9) -> Bool { abs(a - b) <= tolerance }
