import Foundation
import Testing

/// `recbench sweep` and `recbench report` through the real binary.
@Suite(.serialized) struct SweepCLITests {
    let sweep = ["sweep", "--config", "run.yml", "--models", "Pop,ItemKNN,EASE", "--set", "k=1,2,3", "--set", "reg_weight=1,10,100"]

    /// run_key → (test metrics, finished_at) of every stored record.
    func records(_ w: Workspace) throws -> [String: ([String: Double], String)] {
        var out: [String: ([String: Double], String)] = [:]
        for file in w.resultFiles {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + file))) as! [String: Any]
            out[object["run_key"] as! String] = (object["test"] as! [String: Double], object["finished_at"] as! String)
        }
        return out
    }

    @Test func killedThreeTimesTheSweepResumesToTheSameResults() throws {
        let reference = try Workspace()
        let full = try reference.run(sweep)
        #expect(full.status == 0, "\(full.stderr)")
        let expected = try records(reference)
        #expect(expected.count == 7)   // Pop 1 + ItemKNN 3 + EASE 3 (grid keys a model lacks collapse)

        let w = try Workspace()
        var finishedBefore: [String: String] = [:]
        for target in [1, 3, 5] {
            try CLI.killed(sweep, in: w.root) { w.resultFiles.count >= target }
            usleep(300_000)   // the killed sweep's run ends with it (aKilledSweepEndsItsRunningChild)
            for (key, value) in try records(w) { finishedBefore[key] = finishedBefore[key] ?? value.1 }
        }
        #expect(!finishedBefore.isEmpty && finishedBefore.count < 7, "the kills should interrupt the sweep")
        let resumed = try w.run(sweep)
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(resumed.stdout.contains("already done"))
        let final = try records(w)
        #expect(Set(final.keys) == Set(expected.keys))
        for (key, value) in final { #expect(value.0 == expected[key]?.0, "metrics differ for \(key)") }
        // No run that had finished was computed again.
        for (key, finishedAt) in finishedBefore { #expect(final[key]?.1 == finishedAt, "\(key) was recomputed") }
        // A complete sweep reruns nothing.
        let again = try w.run(sweep)
        #expect(again.stdout.contains("0 run now, 7 already done"))
    }

    /// A sweep killed alone (its process only, as `kill` or a scheduler's timeout does; SIGKILL here,
    /// since a test runner may pass SIGTERM on ignored) takes the run it started with it: the child
    /// is killed when its parent dies, not left to finish.
    @Test func aKilledSweepEndsItsRunningChild() throws {
        let w = try Workspace()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = ["sweep", "--config", "run.yml", "--models", "BPR", "--set", "epochs=1000000", "--set", "stopping_step=1000000", "--quiet"]
        p.currentDirectoryURL = URL(fileURLWithPath: w.root)
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { kill(p.processIdentifier, SIGKILL); p.waitUntilExit() } }   // never left running
        func children() -> [Int32] {
            let path = "/proc/\(p.processIdentifier)/task/\(p.processIdentifier)/children"
            return ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int32($0) }
        }
        let deadline = Date().addingTimeInterval(30)
        while children().isEmpty && p.isRunning && Date() < deadline { usleep(10_000) }
        let child = try #require(children().first, "the sweep started no run")
        usleep(300_000)   // the child is past its start-up and training
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
        // Gone, or a zombie no one reaps (a container's init may not): either way no longer running.
        func running() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8) else { return false }
            return !(stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? false)
        }
        let end = Date().addingTimeInterval(10)
        while running() && Date() < end { usleep(20_000) }
        let stillRunning = running()
        if stillRunning { kill(child, SIGKILL) }
        #expect(!stillRunning, "the sweep's run \(child) outlived it")
        #expect(w.resultFiles.isEmpty, "no result from an interrupted run (an orphan left to finish stores one in ~25 s)")
    }

    /// Two shards of one plan, run one after the other into one results folder (as two
    /// array tasks would), store exactly the single-process sweep's runs and metrics; the
    /// partition is disjoint and covers the plan; a resubmitted shard recomputes nothing.
    @Test func twoShardsTogetherAreTheWholeSweep() throws {
        let whole = try Workspace()
        #expect(try whole.run(sweep).status == 0)
        let expected = try records(whole)

        let w = try Workspace()
        let listed = try (1...2).map { i in try w.run(sweep + ["--shard", "\(i)/2", "--list"]).stdout.split(separator: "\n") }
        #expect(listed[0] == listed[1], "--list prints the whole plan whichever shard is named")
        let shards = listed[0].map { line in line.split(separator: "\t")[3] }
        #expect(shards.count == 7 && Set(shards) == ["shard 1/2", "shard 2/2"], "\(listed[0])")
        #expect(abs(shards.filter { $0 == "shard 1/2" }.count - shards.filter { $0 == "shard 2/2" }.count) <= 1)
        for i in 1...2 {
            let out = try w.run(sweep + ["--shard", "\(i)/2"])
            #expect(out.status == 0, "\(out.stderr)")
            #expect(out.stdout.contains("sweep: \(shards.filter { $0 == "shard \(i)/2" }.count) runs"), "\(out.stdout)")
        }
        let final = try records(w)
        #expect(Set(final.keys) == Set(expected.keys))
        for (key, value) in final { #expect(value.0 == expected[key]?.0, "metrics differ for \(key)") }
        let again = try w.run(sweep + ["--shard", "1/2"])
        #expect(again.stdout.contains("0 run now"), "\(again.stdout)")
        let bad = try w.run(sweep + ["--shard", "3/2"])
        #expect(bad.status != 0 && bad.stderr.contains("i/N"), "\(bad.stderr)")
    }

    @Test func parallelJobsStoreTheSameResults() throws {
        let serial = try Workspace(), parallel = try Workspace()
        #expect(try serial.run(sweep).status == 0)
        let out = try parallel.run(sweep + ["--jobs", "3"])
        #expect(out.status == 0, "\(out.stderr)")
        let a = try records(serial), b = try records(parallel)
        #expect(Set(a.keys) == Set(b.keys))
        for (key, value) in a { #expect(b[key]?.0 == value.0) }
    }

    /// A grid over RecBole's deprecated name of a key still names each point (the key is stored
    /// under its current name, which the label once looked for in vain).
    @Test func aGridOverADeprecatedKeyLabelsEachPoint() throws {
        let w = try Workspace()
        let listed = try w.run(["sweep", "--config", "run.yml", "--models", "BPR", "--set", "neg_sampling={uniform: 1},{uniform: 2}", "--list"])
        let labels = listed.stdout.split(separator: "\n").map { $0.split(separator: "\t")[1] }
        #expect(labels.count == 2 && Set(labels).count == 2 && labels.allSatisfy { $0.hasPrefix("BPR neg_sampling=") }, "\(listed.stdout)")
    }

    /// A model with no training loop reads no training key: a grid over one is a single run of it.
    @Test func aTrainingKeyGridIsOneRunOfAClosedFormModel() throws {
        let w = try Workspace()
        let listed = try w.run(["sweep", "--config", "run.yml", "--models", "EASE,BPR", "--set", "learning_rate=0.001,0.01",
                                "--set", "train_neg_sample_args={distribution: uniform, sample_num: 1},~", "--list"])
        let labels = listed.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[1]) }
        #expect(labels.filter { $0.hasPrefix("EASE") } == ["EASE"], "\(listed.stdout)")
        #expect(labels.filter { $0.hasPrefix("BPR") }.count == 4, "\(listed.stdout)")
    }

    /// A model that draws nothing (EASE) is one run of a grid over seeds while the split draws
    /// nothing (TO); a model that draws (BPR), or a shuffled split (RO), is one run per seed.
    @Test func aSeedGridIsOneRunOfAModelThatDrawsNothing() throws {
        let w = try Workspace()
        for (order, ease) in [("TO", 1), ("RO", 2)] {
            let listed = try w.run(["sweep", "--config", "run.yml", "--models", "EASE,BPR", "--set", "seed=1,2",
                                    "--set", "eval_args={order: \(order), split: {RS: [0.6, 0.2, 0.2]}}", "--list"])
            let labels = listed.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[1]) }
            #expect(labels.filter { $0.hasPrefix("EASE") }.count == ease && labels.filter { $0.hasPrefix("BPR") }.count == 2, "\(order): \(listed.stdout)")
        }
    }

    /// A folder holding an older recbench's record of the same run labels both by version.
    @Test func recordsOfTwoVersionsAreToldApart() throws {
        let w = try Workspace()
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "Pop"]).status == 0)
        let file = try #require(w.resultFiles.first { $0.contains("/Pop-") })
        let text = try String(contentsOfFile: w.root + "/out/" + file, encoding: .utf8)
        let older = text.replacingOccurrences(of: "\"recbench_version\" : \"", with: "\"recbench_version\" : \"0.0.1-")
        #expect(older != text)
        try older.write(toFile: w.root + "/out/" + file.replacingOccurrences(of: "/Pop-", with: "/Pop-old"), atomically: true, encoding: .utf8)
        let report = try w.run(["report", "out"]).stdout
        #expect(report.contains("| Pop (recbench 0.0.1-") && report.components(separatedBy: "| Pop (recbench ").count == 3, "\(report)")
    }

    @Test func aFailingRunIsRecordedAndTheSweepGoesOn() throws {
        // Item z occurs only in one user's last (test) row: with reg_weight 0 EASE's Gram
        // matrix is singular, so that run fails; the others must still finish.
        var rows = "user_id:token\titem_id:token\ttimestamp:float\n"
        for u in 0..<6 { for i in 0..<5 where (u + i) % 3 != 0 { rows += "u\(u)\ti\(i)\t\(u * 10 + i)\n" } }
        rows += "u0\tz\t99\n"
        let w = try Workspace(inter: rows)
        let out = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE", "--set", "reg_weight=0,10"])
        #expect(out.status == 1)
        #expect(out.stderr.contains("FAILED"))
        #expect(out.stdout.contains("1 failed"))
        #expect(w.resultFiles.count == 2)   // Pop and EASE reg_weight=10
        #expect(w.allFiles.contains { $0.hasSuffix(".failed.json") })
        let report = try w.run(["report", "out"])
        #expect(report.stdout.contains("Failed runs") && report.stdout.contains("EASE"))
        #expect(!report.stdout.contains("since run again"), "a grid point's failure is no earlier attempt of a later row")
        // A plain run that failed, then succeeded with the config changed: still listed, and said to be replaced.
        let solo = try Workspace(inter: rows)
        #expect(try solo.run(["sweep", "--config", "run.yml", "--models", "EASE", "--set", "reg_weight=0"]).status == 1)
        #expect(try solo.run(["sweep", "--config", "run.yml", "--models", "EASE", "--set", "reg_weight=10"]).status == 0)
        let fixed = try solo.run(["report", "out"]).stdout
        #expect(fixed.contains("Failed runs") && fixed.contains("since run again with other settings: EASE's row above"), "\(fixed)")
        #expect(try solo.run(["report", "out", "--format", "json"]).stdout.contains("\"rerun_since\" : true"))
    }

    /// On repeat-purchase data under RecBole's mask, the page's caveat renders its Markdown.
    @Test func theHTMLCaveatRendersInlineCode() throws {
        var rows = "user_id:token\titem_id:token\ttimestamp:float\n"
        for u in 0..<6 { for i in 0..<5 where (u + i) % 3 != 0 { rows += "u\(u)\ti\(i)\t\(u * 10 + i)\n" } }
        rows += "u1\ti2\t98\nu1\ti1\t99\n"   // u1 buys i1 again last: a repeat in test
        let w = try Workspace(inter: rows)
        // The repeat baseline joins unasked: listed in the plan, and marked in the report.
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "Pop", "--list"]).stdout.contains("RepeatPop"))
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "Pop", "--quiet"]).status == 0)
        #expect(try w.run(["report", "out"]).stdout.contains("| RepeatPop (repeat baseline) |"))
        #expect(try w.run(["report", "out", "--format", "html", "-o", "page.html"]).status == 0)
        let page = try String(contentsOfFile: w.root + "/page.html", encoding: .utf8)
        #expect(page.contains("<code>history_mask: recbole</code>"))
        #expect(!page.contains("`"))
    }

    /// The page answers the shop's questions: with three masks over repeat data, each model's
    /// headline metric under each mask and recbole's edge over the better honest mask (checked
    /// against the JSON report's values), the repeat/explore chart, readable headers, and the
    /// data and settings behind each table.
    @Test func theHTMLPageComparesMasksAndDecomposesRecall() throws {
        var rows = "user_id:token\titem_id:token\ttimestamp:float\n"
        for u in 0..<8 { for i in 0..<6 where (u + i) % 3 != 0 { rows += "u\(u)\ti\(i)\t\(u * 10 + i)\n" } }
        for u in 0..<8 { rows += "u\(u)\ti\(u % 3 == 0 ? 1 : 2)\t\(90 + u)\n" }   // buys again last: repeats in test
        let w = try Workspace(inter: rows)
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "Pop", "--set", "history_mask=none,seen,recbole", "--quiet"]).status == 0)
        let page = try w.run(["report", "out", "--format", "html"]).stdout
        for part in ["what the history mask changes · MRR@2", "MRR@2 (the headline metric)", "Repeat or explore", "share of top K seen before",
                     "<details><summary>Data and settings</summary>", "<th title=\"users_with_hit@2\">Users with a hit@2</th>"] {
            #expect(page.contains(part), "\(part)")
        }
        #expect(!page.contains("<th>users_with") && !page.contains(">users_with_hit@2<"))
        // The leak column: recbole − the better of none and seen, per model, from the JSON report.
        let json = try JSONSerialization.jsonObject(with: Data(try w.run(["report", "out", "--format", "json"]).stdout.utf8)) as? [String: Any]
        var mrr: [String: [String: Double]] = [:]   // mask → label → mrr@2
        for g in json?["groups"] as? [[String: Any]] ?? [] {
            for row in g["rows"] as? [[String: Any]] ?? [] {
                mrr[g["history_mask"] as! String, default: [:]][row["label"] as! String] = (row["values"] as? [String: Double])?["mrr@2"]
            }
        }
        for label in ["Pop", "RepeatPop (repeat baseline)"] {
            let r = try #require(mrr["recbole"]?[label]), honest = max(try #require(mrr["none"]?[label]), try #require(mrr["seen"]?[label]))
            #expect(page.contains(String(format: "%+.4f", r - honest)), "\(label): \(r) vs \(honest)")
        }
    }

    /// A report option the stored results cannot answer is an error naming what they hold,
    /// never a table sorted by nothing or full of dashes, nor a CSV with Markdown appended.
    @Test func reportRefusesWhatTheResultsDoNotHold() throws {
        let w = try Workspace()
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE", "--quiet"]).status == 0)
        for (arguments, mentions) in [(["--sort", "ndgc@2"], ["'--sort'", "ndgc@2", "did you mean 'ndcg@2'"]),
                                      (["--sort", "ndcg@20"], ["'--sort'", "ndcg@20", "sortable"]),
                                      (["--k", "5"], ["'--k'", "cutoff 5", "@2"]),
                                      (["--format", "csv", "--significance", "ndcg@2"], ["'--significance'", "csv"])] {
            let out = try w.run(["report", "out"] + arguments)
            #expect(out.status != 0 && out.stdout.isEmpty && mentions.allSatisfy { out.stderr.contains($0) }, "\(arguments): \(out.stderr)")
            #expect(out.stderr.split(separator: "\n").count == 1)
        }
    }

    /// The ETA goes by earlier runs of each model on the same data: a sweep of new settings
    /// shows one from its first line; with no earlier run, none until a run has finished.
    @Test func theETAGoesByEarlierRunsOfEachModel() throws {
        let w = try Workspace()
        func firstLine(_ out: CLI.Output) -> Substring? { out.stderr.split(separator: "\n").first { $0.contains("[1/2] Pop: started") } }
        let first = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE"])
        #expect(first.status == 0 && firstLine(first)?.contains("ETA") == false, "\(first.stderr)")
        let second = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE", "--set", "topk=[2,3]"])
        #expect(second.status == 0 && firstLine(second)?.contains("ETA 0:") == true, "\(second.stderr)")
    }

    /// The same data under another spelling of its path is the same run: a sweep resumes.
    @Test func anotherSpellingOfDataPathResumes() throws {
        let w = try Workspace()
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE", "--quiet"]).status == 0)
        let again = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE", "--set", "data_path=./data", "--quiet"])
        #expect(again.status == 0 && again.stdout.contains("0 run now, 2 already done"), "\(again.stdout)")
    }

    /// Notes say what happened: a random split of data with a time field says so once, and
    /// under history mask seen the report blames the mask, not the data, for no repeat hits.
    @Test func notesNameTheirCause() throws {
        let random = try Workspace(config: Workspace.config.replacingOccurrences(of: "order: TO, ", with: ""))
        let out = try random.run(["run", "--model", "Pop", "--config", "run.yml"])
        #expect(out.status == 0 && out.stderr.components(separatedBy: "the split is random").count == 2, "\(out.stderr)")
        #expect(out.stderr.contains("eval_args.order: TO"))
        let seen = try Workspace()
        #expect(try seen.run(["sweep", "--config", "run.yml", "--models", "Pop", "--set", "history_mask=seen", "--quiet"]).status == 0)
        let page = try seen.run(["report", "out", "--format", "html"])
        #expect(page.stdout.contains("history mask seen removes each user's earlier items"), "\(page.stdout.suffix(300))")
    }

    @Test func reportFormatsAndPerUserExport() throws {
        let w = try Workspace()
        let quiet = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,EASE", "--quiet"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(quiet.stdout.split(separator: "\n").count == 1 && quiet.stdout.hasPrefix("sweep: 2 runs"))
        let md = try w.run(["report", "out", "--significance", "ndcg@2", "--test", "wilcoxon"])
        #expect(md.status == 0, "\(md.stderr)")
        #expect(md.stdout.contains("| model | recall@2 |"))
        #expect(md.stdout.contains("Wilcoxon"))
        let csv = try w.run(["report", "out", "--format", "csv"])
        let rows = csv.stdout.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == 3)   // header + 2 runs
        let hits = try #require(rows[0].firstIndex(of: "users_with_hit@2")), ndcg = try #require(rows[0].firstIndex(of: "ndcg@2"))
        #expect(rows.dropFirst().allSatisfy { Int($0[hits]) != nil }, "counts are integers: \(csv.stdout)")
        #expect(rows.dropFirst().allSatisfy { $0[ndcg].split(separator: ".").last?.count == 4 }, "metrics at metric_decimal_place")
        let json = try w.run(["report", "out", "--format", "json"])
        #expect((try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])?["groups"] != nil)
        let latex = try w.run(["report", "out", "--format", "latex"])
        #expect(latex.stdout.contains("\\begin{tabular}") && latex.stdout.contains("\\textbf{"))
        let html = try w.run(["report", "out", "--format", "html", "-o", "page.html"])
        #expect(html.status == 0)
        let page = try String(contentsOfFile: w.root + "/page.html", encoding: .utf8)
        // Headline, three analyses, timing: no repeats in this data, so the repeat-share chart is a
        // note and there is no repeat/explore chart.
        #expect(page.components(separatedBy: "<svg").count - 1 == 5)
        #expect(page.contains("No repeat hits (every hit is a new item in this data)"))
        #expect(!page.contains("http://") && !page.contains("https://"))   // self-contained

        let withTests = try w.run(["report", "out", "--format", "html", "--significance", "ndcg@2"])
        let section = try #require(withTests.stdout.range(of: "<h2>Significance</h2>"), "\(withTests.stderr)")
        #expect(withTests.status == 0 && section.upperBound < withTests.stdout.range(of: "</body>")!.lowerBound)

        let run = try w.run(["run", "--model", "EASE", "--config", "run.yml", "--per-user"])
        #expect(run.status == 0)
        let csvFile = w.allFiles.first { $0.hasSuffix(".users.csv") }
        #expect(csvFile != nil)
        let lines = try String(contentsOfFile: w.root + "/out/" + csvFile!, encoding: .utf8).split(separator: "\n")
        #expect(lines.first == "split,user,metric,value")
        #expect(lines.dropFirst().allSatisfy { $0.split(separator: ",")[1].hasPrefix("u") })   // keyed by the user token
        #expect(w.allFiles.contains { $0.hasSuffix(".users.jsonl") })
    }
}

/// `report --over-seeds`: a model's runs that differ only in `seed` are one row, each value
/// their mean and beside it the sample standard deviation, both as the test computes them from
/// the per-run report; runs that differ in another setting stay apart.
extension SweepCLITests {
    @Test func overSeedsAveragesASettingsRunsAndKeepsSettingsApart() throws {
        let w = try Workspace()
        let sweep = try w.run(["sweep", "--config", "run.yml", "--models", "BPR", "--set", "seed=1,2,3", "--set", "embedding_size=4,8",
                               "--set", "epochs=3", "--quiet"])
        #expect(sweep.status == 0, "\(sweep.stderr)")
        func rows(_ arguments: [String]) throws -> [[String: Any]] {
            let json = try JSONSerialization.jsonObject(with: Data(try w.run(["report", "out", "--format", "json"] + arguments).stdout.utf8))
            let groups = try #require((json as? [String: Any])?["groups"] as? [[String: Any]])
            return groups.flatMap { $0["rows"] as? [[String: Any]] ?? [] }
        }
        let single = try rows([]), merged = try rows(["--over-seeds"])
        #expect(single.count == 6 && merged.count == 2, "\(merged)")
        for size in ["4", "8"] {
            let runs = single.filter { ($0["label"] as? String)?.contains("embedding_size=\(size)") == true }
            let row = try #require(merged.first { ($0["label"] as? String) == "BPR (embedding_size=\(size), 3 seeds)" }, "\(merged)")
            #expect(runs.count == 3 && row["runs"] as? Int == 3)
            let values = try #require(row["values"] as? [String: Double]), spread = try #require(row["spread"] as? [String: Double])
            for key in ["ndcg@2", "recall@2", "item_coverage@2"] {
                let xs = try runs.map { try #require(($0["values"] as? [String: Double])?[key]) }
                let mean = xs.reduce(0, +) / 3, sd = (xs.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / 2).squareRoot()
                let (m, d) = (try #require(values[key]), try #require(spread[key]))
                #expect(abs(m - mean) < 1e-12 && abs(d - sd) < 1e-12, "\(key): \(xs)")
            }
            let keys = try #require(row["run_keys"] as? [String])
            #expect(Set(keys) == Set(runs.compactMap { $0["run_key"] as? String }))
        }
        let spreads = merged.compactMap { ($0["spread"] as? [String: Double])?["item_coverage@2"] }
        try #require(spreads.contains { $0 > 0 }, "the seeds must give different runs for this test to tell a mean from a run")
        let md = try w.run(["report", "out", "--over-seeds"]).stdout
        #expect(md.contains("mean ± sd over seeds") && md.contains("| BPR (embedding_size=4, 3 seeds) | ") && md.contains(" ± "), "\(md)")
        // The charts draw a varying row's ± sd as a whisker about its bar's end; a plain report draws none.
        let page = try w.run(["report", "out", "--over-seeds", "--format", "html"]).stdout
        #expect(page.components(separatedBy: "<path class=\"spread\"").count - 1 >= 2 && page.contains(" ± "))
        #expect(!(try w.run(["report", "out", "--format", "html"]).stdout.contains("class=\"spread\"")))
        let latex = try w.run(["report", "out", "--over-seeds", "--format", "latex"]).stdout
        #expect(latex.contains("$\\pm$") && latex.contains("mean $\\pm$ sample standard deviation over seeds"), "\(latex)")
        let csv = try w.run(["report", "out", "--over-seeds", "--format", "csv"]).stdout.split(separator: "\n")
        func fields(_ line: Substring) -> Int {   // commas outside quotes: a label with a comma is quoted
            line.reduce(into: (count: 1, quoted: false)) { state, ch in
                if ch == "\"" { state.quoted.toggle() } else if ch == ",", !state.quoted { state.count += 1 }
            }.count
        }
        #expect(csv.count == 3 && Set(csv.map(fields)).count == 1, "\(csv)")
        let refused = try w.run(["report", "out", "--over-seeds", "--significance", "ndcg@2"])
        #expect(refused.status != 0 && refused.stderr.contains("--over-seeds"), "\(refused.stderr)")
        // A config key that varies (not a hyperparameter) keeps its settings apart too.
        #expect(try w.run(["sweep", "--config", "run.yml", "--models", "BPR", "--set", "seed=1,2", "--set", "embedding_size=4",
                           "--set", "epochs=3", "--set", "learning_rate=0.05", "--quiet"]).status == 0)
        #expect(try rows(["--over-seeds"]).count == 3)
    }
}

/// `recbench sample` for a sized log: the file where it says, the rows it says, and no
/// temp file; a bad shape is a usage error.
extension SweepCLITests {
    @Test func sampleWritesASizedLog() throws {
        let w = try Workspace()
        let out = try w.run(["sample", "--users", "40", "--items", "60", "--interactions", "1000", "--out", "gen", "--name", "g"])
        #expect(out.status == 0, "\(out.stderr)")
        let text = try String(contentsOfFile: w.root + "/gen/g/g.inter", encoding: .utf8)
        #expect(text.split(separator: "\n").count == 1_001 && text.hasPrefix("user_id:token\titem_id:token\ttimestamp:float\n"))
        #expect(out.stdout.contains("1000 rows"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: w.root + "/gen/g") == ["g.inter"])
        let bad = try w.run(["sample", "--shape", "ml-30m"])
        #expect(bad.status != 0 && bad.stderr.contains("unknown --shape"), "\(bad.stderr)")
    }
}
