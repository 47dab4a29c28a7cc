import Foundation
import Testing

/// `run --lists`: each evaluated row's ranked list, item by item marked bought-before and hit, checked against what the
/// data says (not what the evaluator computed) and against the per-user hit@K the evaluator reports.
@Suite struct ListsCLITests {
    /// Five purchases per user (train t0–t2, valid t3, test t4 under RS 0.6/0.2/0.2): i0 and i1 first for everyone,
    /// then i2 or i3, then i5; at t4 the even users buy i0 again, the odd ones i4, new to them.
    static let purchases: [[String]] = (0..<6).map { u in ["i0", "i1", u % 2 == 0 ? "i2" : "i3", "i5", u % 2 == 0 ? "i0" : "i4"] }
    static let inter = Workspace.header + purchases.enumerated().flatMap { u, items in
        items.enumerated().map { t, item in "u\(u)\t\(item)\t\(u * 10 + t)\n" }
    }.joined()

    struct Line: Hashable { let split: String, user: String, rank: Int, item: String, before: Bool, hit: Bool }

    func lists(_ w: Workspace, _ arguments: [String]) throws -> [Line] {
        let run = try w.run(["run", "--config", "run.yml", "--lists", "--per-user"] + arguments)
        #expect(run.status == 0, "\(run.stderr)")
        let file = try #require(w.allFiles.first { $0.hasSuffix(".lists.csv") })
        let text = try String(contentsOfFile: w.root + "/out/" + file, encoding: .utf8)
        let rows = text.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        #expect(rows.first == ["split", "user", "rank", "item", "before", "hit"])
        return try rows.dropFirst().map { f in
            try #require(f.count == 6)
            return Line(split: f[0], user: f[1], rank: Int(f[2])!, item: f[3], before: f[4] == "1", hit: f[5] == "1")
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
        // Unmasked, Pop recommends i0 and i1 to everyone: re-buys that hit (even users' test) and re-buys that miss.
        #expect(lines.contains { $0.before && $0.hit } && lines.contains { $0.before && !$0.hit })
        for (key, hit) in try hitsAtTwo(w) {
            let own = lines.filter { "\($0.split)/\($0.user)" == key }
            #expect(own.map(\.rank) == Array(1...own.count) && (hit == 1) == own.contains { $0.hit }, "\(key)")
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
        let sweep = try w.run(["sweep", "--config", "run.yml", "--models", "Pop,ItemKNN", "--lists", "--quiet"])
        #expect(sweep.status == 0, "\(sweep.stderr)")
        let records = w.resultFiles.map { $0.dropLast(".json".count) }, lists = w.allFiles.filter { $0.hasSuffix(".lists.csv") }
        #expect(records.count == 3 && Set(lists) == Set(records.map { $0 + ".lists.csv" }), "\(w.allFiles)")
    }

    /// Next-item rows are examples named "user#position"; before means earlier in the user's sequence.
    @Test func nextItemListsNameTheExampleAndReadItsSequence() throws {
        let w = try Workspace(inter: Self.inter)
        let lines = try lists(w, ["--model", "FPMC", "--set", "epochs=1"])
        #expect(Set(lines.map { "\($0.split)/\($0.user)" }).count == 12)
        for line in lines {
            let parts = line.user.split(separator: "#"), position = Int(parts[1])!
            let items = Self.purchases[Int(parts[0].dropFirst())!]
            #expect(position == (line.split == "valid" ? 3 : 4))
            #expect(line.before == items[..<position].contains(line.item) && line.hit == (line.item == items[position]), "\(line)")
        }
    }
}
