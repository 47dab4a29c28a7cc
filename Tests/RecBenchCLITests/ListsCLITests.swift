import Foundation
import Testing

/// `run --save-lists`: each evaluated row's ranked list, item by item marked bought-before and hit, checked against what the
/// data says (not what the evaluator computed) and against the per-user hit@K the evaluator reports.
@Suite struct ListsCLITests {
    /// Five purchases per user (train t0–t2, valid t3, test t4 under RS 0.6/0.2/0.2): i0 and i1 first for everyone,
    /// then i2 or i3, then i5; at t4 the even users buy i0 again, the odd ones i4, new to them.
    static let purchases: [[String]] = (0..<6).map { u in ["i0", "i1", u % 2 == 0 ? "i2" : "i3", "i5", u % 2 == 0 ? "i0" : "i4"] }
    static let inter = Workspace.header + purchases.enumerated().flatMap { u, items in
        items.enumerated().map { t, item in "u\(u)\t\(item)\t\(u * 10 + t)\n" }
    }.joined()

    struct Line: Hashable { let split: String, user: String, rank: Int, item: String, before: Bool, hit: Bool }

    /// A run's lists, at cutoffs 2 and 6 (every item of the six: each flag is seen both ways).
    func lists(_ w: Workspace, _ arguments: [String]) throws -> [Line] {
        let run = try w.run(["run", "--config", "run.yml", "--save-lists", "--per-user", "--set", "topk=[2,6]"] + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let file = try #require(w.allFiles.first { $0.hasSuffix(".lists.csv") })
        let text = try String(contentsOfFile: w.root + "/out/" + file, encoding: .utf8)
        let rows = text.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        #expect(rows.first == ["split", "user", "rank", "item", "before", "hit"])
        return try rows.dropFirst().map { f in
            try #require(f.count == 6)
            return Line(split: f[0], user: f[1], rank: try #require(Int(f[2])), item: f[3], before: f[4] == "1", hit: f[5] == "1")
        }
    }

    /// The user's items before a split (valid: t0–t2; test: t0–t3) and the split's answer, from the data.
    func expected(_ line: Line) -> (before: Set<String>, answer: String) {
        let items = Self.purchases[Int(line.user.dropFirst())!], end = line.split == "valid" ? 3 : 4
        return (Set(items[..<end]), items[end])
    }

    /// Per-user hit@2 from `.users.csv`, keyed by split and user.
    func hitsAtTwo(_ w: Workspace) throws -> [String: Double] {
        let file = try #require(w.allFiles.first { $0.hasSuffix(".users.csv") })
        let rows = try String(contentsOfFile: w.root + "/out/" + file, encoding: .utf8).split(separator: "\n").map { $0.split(separator: ",") }
        return Dictionary(uniqueKeysWithValues: rows.filter { $0[2] == "hit@2" }.map { ("\($0[0])/\($0[1])", Double($0[3])!) })
    }

    @Test func listsMarkRepurchasesAndHitsAsTheDataSays() throws {
        let w = try Workspace(inter: Self.inter)
        let lines = try lists(w, ["--model", "Pop", "--set", "history_mask=none"])
        #expect(Set(lines.map { "\($0.split)/\($0.user)" }).count == 12)   // six users, valid and test
        for line in lines {
            let truth = expected(line)
            #expect(line.before == truth.before.contains(line.item) && line.hit == (line.item == truth.answer), "\(line)")
        }
        // Unmasked, every item is ranked: re-buys that hit (even users' i0 at test) and that miss, i5 new at valid (its
        // answer) and bought before at test, i4 new to everyone at test.
        #expect(lines.contains { $0.before && $0.hit } && lines.contains { $0.before && !$0.hit } && lines.contains { !$0.before && $0.hit })
        #expect(lines.contains { $0.split == "valid" && $0.item == "i5" && !$0.before })
        #expect(lines.contains { $0.split == "test" && $0.item == "i5" && $0.before })
        for (key, hit) in try hitsAtTwo(w) {
            let own = lines.filter { "\($0.split)/\($0.user)" == key }
            #expect(own.count == 6 && own.map(\.rank) == Array(1...6), "\(key)")
            #expect((hit == 1) == own.contains { $0.hit && $0.rank <= 2 }, "\(key)")
        }
    }

    /// RecBole's mask removes every earlier item but the split's answers: what is left of the past in a list is a hit.
    @Test func underRecBolesMaskOnlyAnswersComeFromThePast() throws {
        let w = try Workspace(inter: Self.inter)
        let lines = try lists(w, ["--model", "Pop"])
        #expect(lines.allSatisfy { !$0.before || $0.hit } && lines.contains { $0.before })
    }

    /// A sweep's runs each write their lists, beside their records (three: the repeats in this data add RepeatPop).
    @Test func aSweepWritesEachRunsLists() throws {
        let w = try Workspace(inter: Self.inter)
        let sweep = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,ItemKNN", "--save-lists", "--quiet"])
        #expect(sweep.status == 0, "\(sweep.stderr)")
        let records = w.resultFiles.map { $0.dropLast(".json".count) }, lists = w.allFiles.filter { $0.hasSuffix(".lists.csv") }
        #expect(records.count == 3 && Set(lists) == Set(records.map { $0 + ".lists.csv" }), "\(w.allFiles)")
    }

    /// Each test user's top-`k` items in a lists file, read here on their own.
    func testLists(_ w: Workspace, model: String, k: Int) throws -> [String: Set<String>] {
        let file = try #require(w.allFiles.first { $0.hasSuffix(".lists.csv") && $0.contains("/\(model)-") })
        var lists: [String: Set<String>] = [:]
        for row in try String(contentsOfFile: w.root + "/out/" + file, encoding: .utf8).split(separator: "\n").dropFirst() {
            let f = row.split(separator: ",").map(String.init)
            if f[0] == "test", let rank = Int(f[2]), rank <= k { lists[f[1], default: []].insert(f[3]) }
        }
        return lists
    }

    /// `report --overlap`: each cell is the mean Jaccard of the two runs' test top-K lists over their users (computed
    /// here from the files), the matrix symmetric; a run stored without lists is named, not compared; a one-table
    /// format, or a folder without lists, is refused.
    @Test func reportOverlapReadsTheStoredLists() throws {
        let w = try Workspace(inter: Self.inter)
        for arguments in [["--model", "Pop", "--save-lists"], ["--model", "ItemKNN", "--save-lists"], ["--model", "BPR", "--set", "epochs=3", "--save-lists"],
                          ["--model", "NeuMF", "--set", "epochs=2"]] {
            #expect(try w.run(["run", "--config", "run.yml", "--quiet"] + arguments).status == 0)
        }
        let report = try w.run(["report", "out", "--overlap"])
        #expect(report.status == 0, "\(report.stderr)")
        let section = try #require(report.stdout.components(separatedBy: "overlap of the test top-2 lists").last)
        let table = section.split(separator: "\n").filter { $0.hasPrefix("|") }.map { $0.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } }
        let models = Array(table[0].dropFirst())
        #expect(Set(models) == ["Pop", "ItemKNN", "BPR"], "\(section)")
        let lists = try Dictionary(uniqueKeysWithValues: models.map { ($0, try testLists(w, model: $0, k: 2)) })
        for row in table.dropFirst(2) {
            for (j, other) in models.enumerated() where other != row[0] {
                let a = try #require(lists[row[0]]), b = try #require(lists[other])
                let shared = a.keys.filter { b[$0] != nil }
                let mean = shared.map { Double(a[$0]!.intersection(b[$0]!).count) / Double(a[$0]!.union(b[$0]!).count) }.reduce(0, +)
                    / Double(shared.count)
                #expect(row[j + 1] == String(format: "%.3f", mean), "\(row[0]) against \(other): \(section)")
            }
        }
        #expect(section.contains("Without lists") && section.contains("NeuMF"))
        #expect(try w.run(["report", "out", "--overlap", "--format", "csv"]).stderr.contains("'--overlap'"))
        let bare = try Workspace(inter: Self.inter)
        #expect(try bare.run(["run", "--config", "run.yml", "--model", "Pop", "--quiet"]).status == 0)
        let refused = try bare.run(["report", "out", "--overlap"])
        #expect(refused.status != 0 && refused.stderr.contains("--save-lists"))
    }

    /// The lists belong to the stored record: --no-save has none to write beside, and a later run of the same settings
    /// without --save-lists takes them away.
    @Test func listsGoWithTheStoredRecord() throws {
        let w = try Workspace(inter: Self.inter)
        let unsaved = try w.run(["run", "--config", "run.yml", "--model", "Pop", "--save-lists", "--no-save"])
        #expect(unsaved.status != 0 && unsaved.stderr.contains("'--save-lists'") && w.allFiles.isEmpty)
        #expect(try w.run(["run", "--config", "run.yml", "--model", "Pop", "--save-lists", "--quiet"]).status == 0)
        #expect(w.allFiles.contains { $0.hasSuffix(".lists.csv") })
        #expect(try w.run(["run", "--config", "run.yml", "--model", "Pop", "--quiet"]).status == 0)
        #expect(!w.allFiles.contains { $0.hasSuffix(".lists.csv") } && w.resultFiles.count == 1)
    }

    /// A lists file that is not one, or is cut short, stops `report --overlap` with the file and line.
    @Test func aDamagedListsFileIsNamed() throws {
        let w = try Workspace(inter: Self.inter)
        for model in ["Pop", "ItemKNN"] { #expect(try w.run(["run", "--config", "run.yml", "--model", model, "--save-lists", "--quiet"]).status == 0) }
        let file = try #require(w.allFiles.first { $0.hasSuffix(".lists.csv") && $0.contains("/Pop-") })
        let path = w.root + "/out/" + file, whole = try String(contentsOfFile: path, encoding: .utf8)
        try String(whole.prefix(whole.count - 4)).write(toFile: path, atomically: true, encoding: .utf8)   // the last row cut
        let cut = try w.run(["report", "out", "--overlap"])
        #expect(cut.status != 0 && cut.stderr.contains(file) && cut.stderr.contains("cut short"), "\(cut.stderr)")
        try "user,item\n".write(toFile: path, atomically: true, encoding: .utf8)
        let other = try w.run(["report", "out", "--overlap"])
        #expect(other.status != 0 && other.stderr.contains("\(file):1") && other.stderr.contains("not a recbench lists file"), "\(other.stderr)")
    }

    /// Next-item rows are examples named "user#position"; before means earlier in the user's sequence.
    @Test func nextItemListsNameTheExampleAndReadItsSequence() throws {
        let w = try Workspace(inter: Self.inter)
        let lines = try lists(w, ["--model", "FPMC", "--set", "epochs=1"])
        #expect(Set(lines.map { "\($0.split)/\($0.user)" }).count == 12)
        for line in lines {
            let parts = line.user.split(separator: "#")
            let position = try #require(parts.count == 2 ? Int(parts[1]) : nil), user = try #require(Int(parts[0].dropFirst()))
            let items = Self.purchases[user]
            #expect(position == (line.split == "valid" ? 3 : 4))
            #expect(line.before == items[..<position].contains(line.item) && line.hit == (line.item == items[position]), "\(line)")
        }
        #expect(lines.contains { $0.before } && lines.contains { !$0.before })
        // history_share@2 of the record: each example's share of its top 2 that came earlier in its sequence, averaged.
        let record = try #require(w.resultFiles.first)
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: w.root + "/out/" + record))) as? [String: Any]
        let share = try #require(((json?["analyses"] as? [String: Any])?["test"] as? [String: Double])?["history_share@2"])
        let test = lines.filter { $0.split == "test" && $0.rank <= 2 }
        #expect(abs(share - Double(test.filter(\.before).count) / Double(test.count)) < 1e-9, "\(share)")
    }
}
