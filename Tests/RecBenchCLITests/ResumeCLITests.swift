import Foundation
import Testing

/// `resume_interval` through the real binary: a run killed while it trains continues from its
/// saved state when started again, and stores what an uninterrupted run stores.
struct ResumeCLITests {
    /// 200 users, 30 items each of 150 by user-dependent strides: NeuMF's 40 epochs take a while.
    static let inter = Workspace.header + (0..<200).flatMap { u in
        (0..<30).map { p in "u\(u)\ti\((u * 7 + p * (1 + u % 5)) % 150)\t\(p)\n" }
    }.joined()
    static let arguments = ["run", "--model", "NeuMF", "--config", "run.yml", "--json", "--set", "epochs=40", "--set", "stopping_step=40",
                            "--set", "threads=2", "--set", "resume_interval=0.001", "--set", "topk=[10]", "--set", "valid_metric=MRR@10"]

    static func result(_ out: CLI.Output) throws -> [String: Any] {
        try #require(out.status == 0, "\(out.stderr)")
        return try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as! [String: Any]
    }

    @Test func aRunKilledWhileTrainingContinuesToAnUninterruptedRunsResult() throws {
        let reference = try Workspace(inter: Self.inter)
        let expected = try Self.result(try reference.run(Self.arguments))

        let w = try Workspace(inter: Self.inter)
        try CLI.killed(Self.arguments, in: w.root) { w.allFiles.contains { $0.hasSuffix(".training") } }
        try #require(w.resultFiles.isEmpty, "the run finished before it was killed")
        // A sweep of the same run lists it as pending with its saved epoch.
        let sets = Self.arguments.dropFirst(5).filter { $0 != "--json" }
        let listed = try w.run(["sweep", "--models", "NeuMF", "--config", "run.yml", "--list"] + sets)
        #expect(listed.status == 0 && listed.stdout.contains("pending, training saved after epoch "), "\(listed.stdout) \(listed.stderr)")

        let out = try w.run(Self.arguments)
        let resumed = try Self.result(out)
        let training = try #require(resumed["training"] as? [String: Any])
        let after = try #require(training["resumed_after"] as? Int, "the run did not continue a saved state: \(out.stderr)")
        #expect(after >= 1 && after < 40 && out.stderr.contains("continuing after epoch \(after)"), "\(out.stderr)")
        #expect(resumed["test"] as? [String: Double] == expected["test"] as? [String: Double])
        #expect(resumed["valid"] as? [String: Double] == expected["valid"] as? [String: Double])
        func curve(_ r: [String: Any]) -> [String] {
            ((r["training"] as? [String: Any])?["epochs"] as? [[String: Any]] ?? []).map { "\($0["loss"] ?? "-") \($0["valid"] ?? "-")" }
        }
        #expect(curve(resumed) == curve(expected) && curve(expected).count == 40)
        #expect(!w.allFiles.contains { $0.hasSuffix(".training") }, "the stored record should supersede the state: \(w.allFiles)")
    }

    /// `--no-save` stores nothing, so it saves no training state either.
    @Test func aRunThatStoresNothingSavesNoState() throws {
        let w = try Workspace(inter: Self.inter)
        let out = try w.run(Self.arguments.map { $0 == "epochs=40" ? "epochs=3" : $0 } + ["--no-save"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(w.allFiles.isEmpty, "\(w.allFiles)")
    }
}
