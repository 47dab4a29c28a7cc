import Foundation
import Testing

/// Outcomes that once passed in silence: a search whose every trial failed exiting 0, a
/// report whose CSV a dataset name broke, rows of different data under one label, a side file
/// that dropped interactions without a word, and a tiny Mart sample that never finished.
@Suite struct SilentOutcomeTests {
    @Test func aSearchWhoseEveryTrialFailsExitsNonZero() throws {
        let w = try Workspace()
        try "learning_rate choice [1e30]\n".write(toFile: w.root + "/s.hyper", atomically: true, encoding: .utf8)
        let out = try w.run(["tune", "--model", "FM", "--config", "run.yml", "--trials", "1", "--space", "s.hyper", "--set", "epochs=1"])
        #expect(out.status == 1, "\(out.status): \(out.stderr)")
        #expect(out.stderr.contains("no trial finished: all 1 failed; trial 1:") && out.stderr.contains("diverged"), "\(out.stderr)")
        #expect(!out.stderr.contains("trial 0"), "trials are numbered from 1: \(out.stderr)")
    }

    @Test func aReportsCSVQuotesTheDatasetNameAndLabelsRowsOfOtherData() throws {
        let name = "a,b \"q\""
        let w = try Workspace(config: Workspace.config.replacingOccurrences(of: "dataset: tiny", with: "dataset: '\(name)'"))
        try FileManager.default.createDirectory(atPath: w.root + "/data/\(name)", withIntermediateDirectories: true)
        try (Workspace.header + Workspace.rows).write(toFile: w.root + "/data/\(name)/\(name).inter", atomically: true, encoding: .utf8)
        #expect(try w.run(["run", "--model", "Pop", "--config", "run.yml", "--quiet"]).status == 0)
        // The same dataset name, one row fewer: another fingerprint.
        let fewer = Workspace.header + Workspace.rows.split(separator: "\n").dropLast().joined(separator: "\n") + "\n"
        try fewer.write(toFile: w.root + "/data/\(name)/\(name).inter", atomically: true, encoding: .utf8)
        #expect(try w.run(["run", "--model", "Pop", "--config", "run.yml", "--quiet"]).status == 0)
        let csv = try w.run(["report", "out", "--format", "csv"])
        let rows = csv.stdout.split(separator: "\n").dropFirst(), quoted = "\"a,b \"\"q\"\"\",recbole,Pop,"
        #expect(rows.count == 2 && rows.allSatisfy { $0.hasPrefix(quoted) }, "\(csv.stdout)")
        let labels = Set(rows.map { $0.dropFirst(quoted.count).split(separator: ",")[0] })
        #expect(labels.count == 2 && labels.allSatisfy { $0.contains("data ") }, "\(csv.stdout)")
        let unknown = try w.run(["report", "out", "--significance", "ndcg@7"])
        #expect(unknown.status != 0 && unknown.stderr.contains("'--significance'") && unknown.stderr.contains("ndcg@2"), "\(unknown.stderr)")
        let perUser = try #require(w.allFiles.first { $0.hasSuffix(".peruser.json") })
        try Data("{\"run_key\": ".utf8).write(to: URL(fileURLWithPath: w.root + "/out/" + perUser))   // cut short
        let cut = try w.run(["report", "out", "--significance", "ndcg@2"])
        #expect(cut.status != 0 && cut.stderr.contains(perUser) && cut.stderr.contains("is not a recbench per-user file")
                && cut.stderr.split(separator: "\n").count == 1, "\(cut.stderr)")
    }

    @Test func interactionsASideFileDropsAreANoticeOfTheRun() throws {
        let w = try Workspace(config: Workspace.config.replacingOccurrences(of: "[user_id, item_id, timestamp]}",
                                                                          with: "[user_id, item_id, timestamp], user: [user_id, age]}"))
        let users = "user_id:token\tage:float\nu0\t30\nu1\t40\nu2\t50\nu3\t20\nu4\t33\n"   // u5 missing
        try users.write(toFile: w.root + "/data/tiny/tiny.user", atomically: true, encoding: .utf8)
        let out = try w.run(["run", "--model", "Pop", "--config", "run.yml", "--json"])
        #expect(out.status == 0, "\(out.stderr)")
        let dropped = Workspace.rows.split(separator: "\n").filter { $0.hasPrefix("u5\t") }.count
        let line = "tiny.user lists no row for the user of \(dropped) of \(Workspace.rows.split(separator: "\n").count) interactions"
        #expect(out.stderr.contains(line), "\(out.stderr)")
        let record = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        #expect((record?["notices"] as? [String])?.contains { $0.contains(line) } == true, "\(out.stdout.prefix(500))")
    }

    /// Settings at the edge of their range that once crashed: an auto-encoder without hidden
    /// layers (its cost indexed the first), xDeepFM with reg_weight 0 (a lookup the loss never
    /// reached had its pullback run); and a size whose memory is refused before it is allocated.
    @Test func edgeSettingsRunOrAreRefusedWithoutACrash() throws {
        let w = try Workspace()
        for (model, setting) in [("MultiDAE", "mlp_hidden_size=[]"), ("MultiVAE", "mlp_hidden_size=[]"), ("xDeepFM", "reg_weight=0")] {
            let out = try w.run(["run", "--model", model, "--config", "run.yml", "--set", setting, "--set", "epochs=1", "--no-save", "--quiet"])
            #expect(out.status == 0, "\(model) \(setting): \(out.status) \(out.stderr.prefix(500))")
        }
        for (model, setting, what) in [("NNCF", "neigh_num=100000", "neighbour windows"), ("MultiDAE", "mlp_hidden_size=[100000,100000]", "weights"),
                                       ("NeuMF", "mlp_hidden_size=[65536,65536]", "weights")] {
            let out = try w.run(["run", "--model", model, "--config", "run.yml", "--set", setting, "--set", "memory_limit_mb=2000", "--no-save"])
            #expect(out.status == 1 && out.stderr.contains("needs an estimated") && out.stderr.contains(what), "\(model): \(out.stderr.prefix(500))")
        }
        let positive = try w.run(["run", "--model", "RecVAE", "--config", "run.yml", "--set", "mixture_weights=[1,0,0]", "--no-save"])
        #expect(positive.status == 1 && positive.stderr.contains("greater than 0"), "\(positive.stderr)")
    }

    @Test func item2vecWithoutPairsSaysItLearnsNothing() throws {
        let out = try Workspace().run(["run", "--model", "Item2vec", "--config", "run.yml", "--set", "session_gap=0", "--set", "epochs=1", "--no-save"])
        #expect(out.status == 0 && out.stderr.contains("no session holds two items"), "\(out.stderr)")
    }

    @Test func anEmptyValidPartIsANotice() throws {
        let twoEach = Workspace.header + (0..<6).map { u in "u\(u)\ti\(u)\t1\nu\(u)\ti\((u + 1) % 6)\t2\n" }.joined()
        let w = try Workspace(inter: twoEach)
        let out = try w.run(["run", "--model", "BPR", "--config", "run.yml", "--set", "epochs=2", "--json"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stderr.contains("the split leaves the valid part empty"), "\(out.stderr)")
    }

    @Test func aTinyMartSampleFinishesAndNonsenseSizesAreRefused() throws {
        let w = try Workspace()
        let tiny = try w.run(["sample", "--users", "3", "--items", "5", "--weeks", "2", "--out", "tiny"])
        #expect(tiny.status == 0, "\(tiny.stderr)")
        for flag in ["--weeks=-1", "--users=0", "--items=0"] {
            let out = try w.run(["sample", flag, "--out", "bad"])
            #expect(out.status != 0 && out.stderr.contains("must be at least 1"), "\(flag): \(out.stderr)")
        }
    }
}
