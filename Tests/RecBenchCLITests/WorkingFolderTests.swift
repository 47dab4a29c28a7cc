import Foundation
import Testing

/// The working folder never changes a result: a model's defaults are compiled in (a stray
/// `Configs/models/<Model>.yml` where the user stands is not read), and a config's relative
/// `data_path` falls back to the config file's folder.
struct WorkingFolderTests {
    static let repo = SeedPaths.repo

    func testMetrics(_ arguments: [String], in folder: String) throws -> [String: Double] {
        let out = try CLI.run(["run"] + arguments + ["--json", "--no-save", "--quiet"], in: folder)
        #expect(out.status == 0, "\(out.stderr)")
        let record = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        return try #require(record?["test"] as? [String: Double])
    }

    @Test func aRunFromAnotherFolderGivesTheSameMetrics() throws {
        let elsewhere = try Workspace().root
        // Defaults files that would change the model, if anything read them.
        try FileManager.default.createDirectory(atPath: elsewhere + "/Configs/models", withIntermediateDirectories: true)
        try "reg_weight: 1.0\n".write(toFile: elsewhere + "/Configs/models/EASE.yml", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: elsewhere + "/models", withIntermediateDirectories: true)
        try "reg_weight: 1.0\n".write(toFile: elsewhere + "/models/EASE.yml", atomically: true, encoding: .utf8)
        let config = Self.repo + "/Configs/ml-100k.yml"
        let here = try testMetrics(["--model", "EASE", "--config", config], in: Self.repo)
        let there = try testMetrics(["--model", "EASE", "--config", config], in: elsewhere)
        #expect(!here.isEmpty && here == there)
        // The stray file's value does change the result when given as a config: the check can fail.
        let changed = try testMetrics(["--model", "EASE", "--config", config, "--config", elsewhere + "/models/EASE.yml"], in: elsewhere)
        #expect(changed != here)
    }

    @Test func aMissingDatasetNamesBothFolders() throws {
        let workspace = try Workspace(config: "dataset: nowhere\ndata_path: data/\n")
        let other = try Workspace().root
        let out = try CLI.run(["run", "--model", "Pop", "--config", workspace.root + "/run.yml", "--no-save"], in: other)
        #expect(out.status != 0)
        #expect(out.stderr.contains("working folder") && out.stderr.contains(workspace.root + "/data/nowhere"), "\(out.stderr)")
    }
}
