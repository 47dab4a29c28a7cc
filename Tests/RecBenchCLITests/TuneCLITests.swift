import Foundation
import Testing

/// `recbench tune` through the real binary: kill and resume, shards, bad input.
@Suite(.serialized) struct TuneCLITests {
    /// 150 users with 12–20 items each of 120, times increasing: big enough that a BPR trial
    /// takes a visible moment, small enough for CI.
    static let inter: String = {
        var rows = Workspace.header
        for u in 0..<150 {
            var items: [Int] = []
            for j in 0..<(12 + u % 9) where !items.contains((u * 7 + j * j * 3 + j) % 120) { items.append((u * 7 + j * j * 3 + j) % 120) }
            for (t, i) in items.enumerated() { rows += "u\(u)\ti\(i)\t\(u * 100 + t)\n" }
        }
        return rows
    }()

    static let config = Workspace.config.replacingOccurrences(of: "topk: [2]", with: "topk: [5]")
        .replacingOccurrences(of: "valid_metric: MRR@2", with: "valid_metric: MRR@5") + "\nepochs: 30\nstopping_step: 100\n"

    static let space = "learning_rate loguniform -7,-2\nembedding_size choice [8,16,32]\n"

    static func workspace() throws -> Workspace {
        let w = try Workspace(inter: inter, config: config)
        try space.write(toFile: w.root + "/bpr.hyper", atomically: true, encoding: .utf8)
        return w
    }

    static let tune = ["tune", "--model", "BPR", "--config", "run.yml", "--space", "bpr.hyper", "--trials", "8", "--pruner", "none"]

    /// number → (values and objective as JSON text, finished_at) of every stored trial.
    static func trials(_ w: Workspace) throws -> [Int: (String, String)] {
        var out: [Int: (String, String)] = [:]
        for file in w.allFiles where file.contains("/tune/") && file.hasSuffix(".json") && file.contains("trial-") {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + file))) as! [String: Any]
            let essence = try JSONSerialization.data(withJSONObject: ["values": object["values"]!, "objective": object["objective"] ?? NSNull(),
                                                                      "state": object["state"]!], options: [.sortedKeys])
            out[object["number"] as! Int] = (String(decoding: essence, as: UTF8.self), object["finished_at"] as! String)
        }
        return out
    }

    static func tunedRecords(_ w: Workspace) -> [String] { w.resultFiles.filter { !$0.contains("/tune/") } }

    @Test func killedThreeTimesTheSearchResumesToTheSameTrials() throws {
        let reference = try Self.workspace()
        let whole = try reference.run(Self.tune)
        #expect(whole.status == 0, "\(whole.stderr)")
        let expected = try Self.trials(reference)
        #expect(expected.count == 8 && Self.tunedRecords(reference).count == 1)

        let w = try Self.workspace()
        var finishedBefore: [Int: String] = [:]
        for target in [1, 3, 5] {
            try CLI.killed(Self.tune, in: w.root) { try Self.trials(w).count >= target }
            for (number, value) in try Self.trials(w) { finishedBefore[number] = finishedBefore[number] ?? value.1 }
        }
        #expect(!finishedBefore.isEmpty && finishedBefore.count < 8, "the kills should interrupt the search (\(finishedBefore.count) trials)")
        let resumed = try w.run(Self.tune)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stderr.contains("stored: resuming"), "\(resumed.stderr)")
        let final = try Self.trials(w)
        #expect(Set(final.keys) == Set(0..<8))
        for (number, value) in final { #expect(value.0 == expected[number]?.0, "trial \(number) differs") }
        for (number, finishedAt) in finishedBefore { #expect(final[number]?.1 == finishedAt, "trial \(number) was run again") }
        #expect(Self.tunedRecords(w).count == 1)
        // A finished search runs nothing again and reuses its test run.
        let again = try w.run(Self.tune)
        #expect(again.status == 0 && !again.stderr.contains("trial ") && !again.stderr.contains("one run with the best values"), "\(again.stderr)")
        // Fewer trials than stored: the best of the first four, its own tuned run, nothing trained again.
        var fewer = Self.tune
        fewer[fewer.firstIndex(of: "8")!] = "4"
        let four = try w.run(fewer)
        #expect(four.status == 0 && !four.stderr.contains("trial "), "\(four.stderr)")
        #expect(Self.tunedRecords(w).count == 2)
        #expect(four.stdout.contains("search    4 trials"), "\(four.stdout)")
    }

    /// Two shards searching into one folder at once store the requested trials between them,
    /// each once, each by its own shard; with the random sampler every trial is what a single
    /// process would have run.
    @Test func twoShardsAtOnceStoreEveryTrialOnce() throws {
        let random = Self.tune + ["--sampler", "random"]
        let reference = try Self.workspace()
        #expect(try reference.run(random).status == 0)
        let expected = try Self.trials(reference)

        let w = try Self.workspace()
        let shards = try (1...2).map { i in
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            p.arguments = random + ["--shard", "\(i)/2"]
            p.currentDirectoryURL = URL(fileURLWithPath: w.root)
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }
        for p in shards { p.waitUntilExit(); #expect(p.terminationStatus == 0) }
        let stored = try Self.trials(w)
        #expect(Set(stored.keys) == Set(0..<8))
        for (number, value) in stored { #expect(value.0 == expected[number]?.0, "trial \(number) differs") }
        let files = w.allFiles.filter { $0.contains("trial-") }
        for file in files {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + file))) as! [String: Any]
            #expect(object["shard"] as? String == "\(1 + (object["number"] as! Int) % 2)/2")
        }
        // Whichever shard ended last saw every trial stored and ran the test once.
        let finish = try w.run(random)
        #expect(finish.status == 0 && !finish.stderr.contains("trial "), "\(finish.stderr)")
        #expect(Self.tunedRecords(w).count == 1)
    }

    /// A shard of a time-budgeted search cannot know when the others stop, so it runs no test and
    /// says how to; `--finish` then runs the test alone, no new trial.
    @Test func timeBudgetedShardLeavesTheTestToAnUnshardedRerun() throws {
        let w = try Self.workspace()
        let budgeted = Self.tune.filter { $0 != "--trials" && $0 != "8" } + ["--sampler", "random", "--budget-seconds", "1.5", "--shard", "1/2"]
        let shard = try w.run(budgeted)
        #expect(shard.status == 0, "\(shard.stderr)")
        #expect(shard.stdout.contains("not run by a shard of a time-budgeted search"), "\(shard.stdout)")
        #expect(Self.tunedRecords(w).isEmpty)
        let stored = try Self.trials(w)
        #expect(!stored.isEmpty && stored.keys.allSatisfy { $0 % 2 == 0 })
        let final = try w.run(budgeted.filter { $0 != "--shard" && $0 != "1/2" } + ["--finish"])
        #expect(final.status == 0 && !final.stderr.contains("trial "), "\(final.stderr)")
        #expect(final.stdout.contains("test (tuned)"), "\(final.stdout)")
        let after = try Self.trials(w)
        #expect(Self.tunedRecords(w).count == 1 && Set(after.keys) == Set(stored.keys))
        for (number, trial) in stored { #expect(after[number]?.1 == trial.1, "trial \(number) ran again") }
        let refused = try w.run(budgeted + ["--finish"])   // --finish with --shard
        #expect(refused.status != 0 && refused.stderr.contains("--finish"), "\(refused.stderr)")
        // Without the search's limit its tuned run would have another key than a sweep's: refused, not stored twice.
        let unlimited = try w.run(budgeted.filter { !["--shard", "1/2", "--budget-seconds", "1.5"].contains($0) } + ["--finish"])
        #expect(unlimited.status != 0 && unlimited.stderr.contains("--budget-seconds"), "\(unlimited.stderr)")
        #expect(Self.tunedRecords(w).count == 1)
        // Without --sampler random the search is TPE's, another one, with nothing stored.
        let elsewhere = try w.run(budgeted.filter { !["--shard", "1/2", "--sampler", "random"].contains($0) } + ["--finish"])
        #expect(elsewhere.status != 0 && elsewhere.stderr.contains("no trial stored"), "\(elsewhere.stderr)")
    }

    /// `sweep --tune N`: each model with a space gets a tuned run beside its default one (Pop
    /// has none and says so), the report sets them side by side, and a rerun does nothing.
    @Test func aTunedSweepReportsDefaultAgainstTuned() throws {
        let w = try Self.workspace()
        let sweep = ["sweep", "--config", "run.yml", "--models", "Pop,ItemKNN,BPR", "--tune", "3"]
        let out = try w.run(sweep)
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stderr.contains("Pop has no search space"), "\(out.stderr)")
        #expect(out.stdout.contains("sweep: 5 runs — 5 run now"), "\(out.stdout)")
        let tuned = try Self.tunedRecords(w).compactMap { file -> [String: Any]? in
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + file))) as! [String: Any]
            return object["tuning"] as? [String: Any]
        }
        #expect(tuned.count == 2 && tuned.allSatisfy { $0["trials"] as? Int == 3 }, "\(tuned)")
        let knn = try #require(tuned.first { ($0["values"] as? [String: Any])?["k"] != nil })
        #expect([10, 20, 50, 100, 200, 400].contains((knn["values"] as! [String: Any])["k"] as! Int))
        let report = try w.run(["report", "out"])
        #expect(report.stdout.contains("Default against tuned"), "\(report.stdout)")
        for model in ["ItemKNN", "BPR"] {
            #expect(report.stdout.split(separator: "\n").contains { $0.contains("| \(model) |") && $0.contains("| 3 (") }, "\(report.stdout)")
        }
        #expect(report.stdout.contains("ItemKNN (tuned: best of 3 trials)"), "\(report.stdout)")
        // Sorted by a value no run keeps per user, the table stays, without a p-value (it once gave way to a warning).
        let byCoverage = try w.run(["report", "out", "--sort", "item_coverage@5"])
        #expect(byCoverage.status == 0 && byCoverage.stdout.contains("Default against tuned"), "\(byCoverage.stdout)\(byCoverage.stderr)")
        let again = try w.run(sweep)
        #expect(again.stdout.contains("0 run now, 5 already done"), "\(again.stdout)")
    }

    @Test func badSearchesFailWithOneLine() throws {
        let w = try Self.workspace()
        try "embedding_size: [8, 16]\n".write(toFile: w.root + "/neither.hyper", atomically: true, encoding: .utf8)
        try "embedding_size choice [8,16]\nlearning_rate loguniform -2,-7\n".write(toFile: w.root + "/inverted.hyper", atomically: true, encoding: .utf8)
        try "embeding_size choice [8,16]\n".write(toFile: w.root + "/typo.hyper", atomically: true, encoding: .utf8)
        let base = ["tune", "--model", "BPR", "--config", "run.yml", "--trials", "2", "--space"]
        for (space, needles) in [("neither.hyper", ["neither.hyper:1", "expected `name type value`"]),
                                 ("inverted.hyper", ["inverted.hyper:2", "low -2.0 > high -7.0"]),
                                 ("typo.hyper", ["typo.hyper:1", "did you mean 'embedding_size'"]),
                                 ("absent.hyper", ["absent.hyper", "not found"])] {
            let out = try w.run(base + [space])
            #expect(out.status != 0)
            #expect(out.stderr.split(separator: "\n").count == 1, "\(out.stderr)")
            for needle in needles { #expect(out.stderr.contains(needle), "\(out.stderr)") }
        }
        let zero = try w.run(["tune", "--model", "BPR", "--config", "run.yml", "--trials", "0"])
        #expect(zero.status != 0 && zero.stderr.contains("--trials must be at least 1"), "\(zero.stderr)")
        let none = try w.run(["tune", "--model", "BPR", "--config", "run.yml"])
        #expect(none.status != 0 && none.stderr.contains("--trials N, --budget-seconds S"), "\(none.stderr)")
        #expect(w.allFiles.isEmpty, "\(w.allFiles)")
    }

    /// --pruner-warmup reaches the pruner: with the rule on from epoch 1 the later trials of this
    /// search are cut early, with it past the last epoch none is, and the record names the rule.
    @Test func thePrunersWarmUpIsTheSearchersChoice() throws {
        var pruned: [Int: Int] = [:]
        for warmup in [1, 31] {
            let w = try Self.workspace()
            let args = ["tune", "--model", "BPR", "--config", "run.yml", "--space", "bpr.hyper", "--trials", "10", "--pruner-warmup", "\(warmup)"]
            let out = try w.run(args)
            #expect(out.status == 0, "\(out.stderr)")
            pruned[warmup] = try Self.trials(w).values.filter { $0.0.contains("\"state\":\"pruned\"") }.count
            let record = try #require(Self.tunedRecords(w).first)
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + record))) as! [String: Any]
            #expect((object["tuning"] as? [String: Any])?["pruner"] as? String == "median from epoch \(warmup)", "\(object["tuning"] ?? "none")")
        }
        #expect(pruned[1]! > 0 && pruned[31]! == 0, "\(pruned)")
        let w = try Self.workspace()
        let zero = try w.run(["tune", "--model", "BPR", "--config", "run.yml", "--trials", "2", "--pruner-warmup", "0"])
        #expect(zero.status != 0 && zero.stderr.contains("--pruner-warmup must be at least 1 epoch"), "\(zero.stderr)")
    }

    /// On a terminal each trial's line is led by a bar of stored trials against --trials; in a
    /// pipe the lines stand alone (`script` gives the binary a pseudo-terminal).
    @Test func aTerminalShowsABarPerTrial() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        let w = try Self.workspace()
        let command = ([CLI.binary] + ["tune", "--model", "BPR", "--config", "run.yml", "--space", "bpr.hyper", "--trials", "3"])
            .joined(separator: " ")
        let tty = try CLI.run(["-qec", command, "/dev/null"], in: w.root, executable: "/usr/bin/script")
        #expect(tty.status == 0, "\(tty.stdout)")
        for n in 1...3 { #expect(tty.stdout.contains("\(String(repeating: "█", count: 20 * n / 3))"), "\(tty.stdout)") }
        #expect(tty.stdout.contains(" 3/3  trial 3/3 · "), "\(tty.stdout)")
        let piped = try w.run(["tune", "--model", "BPR", "--config", "run.yml", "--space", "bpr.hyper", "--trials", "4"])
        #expect(piped.status == 0 && piped.stderr.contains("trial 4/4 · ") && !piped.stderr.contains("█"), "\(piped.stderr)")
    }
}
