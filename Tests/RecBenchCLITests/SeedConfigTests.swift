import Foundation
import Testing

/// The shop's own RecBole config (`../shared/reference/seed-mart-config.yml`) runs unchanged,
/// and `Configs/mart.yml` is that file verbatim plus the sample's two overrides.
enum SeedPaths {
    static let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let shared: String? = {
        let path = URL(fileURLWithPath: repo).deletingLastPathComponent().appendingPathComponent("shared/reference/seed-mart-config.yml").path
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }()
}

@Suite(.serialized, .enabled(if: SeedPaths.shared != nil, "../shared is absent: the shop's config lives in ../shared/reference"))
struct SeedConfigTests {
    static let repo = SeedPaths.repo
    static let shared = SeedPaths.shared

    @Test func martConfigHoldsTheShopsFileVerbatim() throws {
        let mart = try String(contentsOfFile: Self.repo + "/Configs/mart.yml", encoding: .utf8)
        let original = try String(contentsOfFile: Self.shared!, encoding: .utf8)
        let begin = try #require(mart.range(of: "--- # the shop's config, verbatim\n"))
        let end = try #require(mart.range(of: "--- # overrides for the shipped sample\n"))
        #expect(String(mart[begin.upperBound..<end.lowerBound]) == original)
        let overrides = mart[end.upperBound...].split(separator: "\n").filter { !$0.hasPrefix("#") }
        // Only what the sample needs: where it is, and GRU4RecF's `.item` column (its default `class` is ml-100k's).
        #expect(overrides.map { $0.split(separator: "#")[0].trimmingCharacters(in: .whitespaces) }
                == ["dataset: mart-sample", "data_path: Datasets/", "selected_features: [item_category_id]"])
    }

    /// Test metrics from `recbench run … --json`, and the stderr notes.
    func run(_ model: String, _ config: [String], _ extra: [String]) throws -> (test: [String: Double], notes: [String]) {
        let out = try CLI.run(["run", "--model", model, "--no-save", "--json"] + config + extra, in: Self.repo)
        #expect(out.status == 0, "\(out.stderr)")
        let record = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        let test = try #require(record?["test"] as? [String: Double])
        return (test, out.stderr.split(separator: "\n").map(String.init).filter { $0.hasPrefix("recbench: note:") })
    }

    @Test(arguments: [("EASE", [String]()), ("BPR", ["--set", "epochs=3"]), ("RecVAE", ["--set", "epochs=2"])])
    func theShopsFileRunsUnchangedAndMatchesMartYml(model: String, extra: [String]) throws {
        let scratch = NSTemporaryDirectory() + "recbench-seed-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let common = extra + ["--set", "checkpoint_dir=\(scratch)"]
        let original = try run(model, ["--config", Self.shared!, "--dataset", "mart-sample", "--set", "data_path=\(Self.repo)/Datasets/"], common)
        let mart = try run(model, ["--config", "Configs/mart.yml"], common)
        #expect(original.test == mart.test)
        #expect(!original.test.isEmpty)
        // One note for the ignored infrastructure keys, one for the deprecated neg_sampling.
        #expect(original.notes.count == 2, "\(original.notes)")
        #expect(original.notes.contains { $0.contains("'neg_sampling'") })
        #expect(original.notes.contains { $0.contains("ignored: gpu_id") })
    }
}
