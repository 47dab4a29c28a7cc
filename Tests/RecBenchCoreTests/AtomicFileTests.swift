import Foundation
import Testing
import RecBenchCore
import Linalg

struct AtomicFileTests {
    func parse(_ text: String, wanted: [String]? = nil, separator: String = "\t") throws -> AtomicTable {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer {
            try AtomicFileReader.parse($0, path: "x.inter", fieldSeparator: Array(separator.utf8), sequenceSeparator: " ", wanted: wanted)
        }
    }

    func error(_ text: String, wanted: [String]? = nil) -> RecBenchError? {
        do { _ = try parse(text, wanted: wanted); return nil } catch let e as RecBenchError { return e } catch { return nil }
    }

    @Test func readsEveryColumnType() throws {
        let t = try parse("id:token\tname:token_seq\tscore:float\tvec:float_seq\n7\ta b  c\t2.5\t1 -2e3\n8\t\t\t\n")
        #expect(t.rowCount == 2)
        #expect(t.columns["id"] == .token(TokenColumn(["7", "8"])))
        #expect(t.columns["name"] == .tokenSequence([["a", "b", "c"], []]))
        #expect(t.columns["vec"] == .floatSequence([[1, -2000], []]))
        let scores = try t.floats("score")
        #expect(scores[0] == 2.5 && scores[1].isNaN)   // empty float = missing
    }

    @Test func loadsOnlyTheWantedColumnsAndKeepsLineNumbers() throws {
        let t = try parse("\u{FEFF}u:token\ti:token\tt:float\r\n1\t2\t3\r\n\r\n4\t5\t6\r\n", wanted: ["u", "t"])
        #expect(t.fields.map(\.name) == ["u", "t"])
        #expect(t.columns["i"] == nil)
        #expect(t.lineNumbers == [2, 4])   // blank line 3 skipped, CRLF and BOM handled
        #expect(try t.tokens("u") == ["1", "4"])
    }

    /// RecBole reads atomic files with pandas: a field that starts with `"` is quoted (pandas
    /// read this very text to these values: 'x"y', 'p q', 'm<TAB>n', 'z"w').
    @Test func aFieldThatStartsWithAQuoteIsReadAsPandasReadsIt() throws {
        let t = try parse("a:token\tb:token_seq\tc:float\n\"x\"\"y\"\t\"p q\"\t\"1\"\n\"m\tn\"\tz\"w\t3\nx\"y\t\"\"\t\n")
        #expect(try t.tokens("a") == ["x\"y", "m\tn", "x\"y"])
        #expect(t.columns["a"] == .token(TokenColumn(["x\"y", "m\tn", "x\"y"])))   // quoted and bare spellings are one token
        #expect(t.columns["b"] == .tokenSequence([["p", "q"], ["z\"w"], []]))
        #expect(try t.floats("c")[0] == 1 && t.floats("c")[1] == 3)
        // What pandas refuses is refused, naming the line: text after a closing quote, or a quote left open.
        #expect(error("a:token\tb:token\n\"x\"y\t1\n")?.location == "x.inter:2")
        #expect(error("a:token\tb:token\n1\t2\n\"x\t1\n")?.message.contains("does not close on this line") == true)
        // A longer separator is a regular expression to pandas, which then takes quotes literally.
        let long = try parse("a:token::b:token\n\"x\"::\"y\n", separator: "::")
        #expect(try long.tokens("a") == ["\"x\""] && long.tokens("b") == ["\"y"])
        // A token_seq field that is a text pandas reads as missing is empty; one with more around it is not.
        let seq = try parse("s:token_seq\nNA\n NA\nnull x\n")
        #expect(seq.columns["s"] == .tokenSequence([[], ["NA"], ["null", "x"]]))
    }

    @Test func otherSeparatorsWork() throws {
        let t = try parse("u:token,i:token\n1,2\n", separator: ",")
        #expect(try t.tokens("i") == ["2"])
    }

    @Test func malformedHeaderNamesTheColumn() {
        let e = error("user_id:token\titem_id\n1\t2\n")
        #expect(e?.location == "x.inter:1")
        #expect(e?.field == "item_id")
    }

    @Test func unknownTypeSuggestsTheNearestType() {
        let e = error("user_id:token\tt:flaot\n1\t2\n")
        #expect(e?.description.contains("did you mean 'float'") == true)
    }

    @Test func wrongColumnCountNamesTheLine() {
        let e = error("u:token\ti:token\n1\t2\n3\n")
        #expect(e?.location == "x.inter:3")
        #expect(e?.message.contains("expected 2 fields") == true)
    }

    @Test func nonNumericFloatNamesLineAndField() {
        let e = error("u:token\tt:float\n1\t2\n1\tyesterday\n")
        #expect(e?.location == "x.inter:3")
        #expect(e?.field == "t")
        #expect(throws: RecBenchError.self) { try parse("u:token\tt:float\n1\t0x1p3\n") }   // no hex floats
        #expect(throws: RecBenchError.self) { try parse("u:token\tt:float\n1\tinf\n") }
    }

    @Test func invalidUTF8IsRejectedWithItsLine() {
        var bytes = Array("u:token\n".utf8) + [0xC3, 0x28, 0x0A]
        let e = bytes.withUnsafeMutableBufferPointer { buffer -> RecBenchError? in
            do {
                _ = try AtomicFileReader.parse(UnsafeBufferPointer(buffer), path: "x.inter", fieldSeparator: [9], sequenceSeparator: " ", wanted: nil)
                return nil
            }
            catch let e as RecBenchError { return e } catch { return nil }
        }
        #expect(e?.location == "x.inter:2")
    }

    @Test func tokensAreInternedInFirstAppearanceOrderThroughTableGrowth() throws {
        // 5,000 distinct ids (the table grows several times), each on three rows, shuffled
        // deterministically: every row must read back as its own text.
        var ids = (0..<15_000).map { "id\($0 % 5_000)" }
        var rng = SeededGenerator(seed: 7)
        ids.shuffle(using: &rng)
        let t = try parse("u:token\n" + ids.joined(separator: "\n") + "\n")
        let column = try t.tokenColumn("u")
        #expect(column.values == ids)
        #expect(column.vocabulary.count == 5_000)
        var seen = Set<String>(), firstAppearance: [String] = []
        for id in ids where seen.insert(id).inserted { firstAppearance.append(id) }
        #expect(column.vocabulary == firstAppearance)
    }

    @Test func aBadTokenIsReportedAtItsFirstLineEvenWhenRepeated() {
        var bytes = Array("u:token\nok\n".utf8) + [0xC3, 0x28, 0x0A, 0xC3, 0x28, 0x0A]
        let e = bytes.withUnsafeMutableBufferPointer { buffer -> RecBenchError? in
            do {
                _ = try AtomicFileReader.parse(UnsafeBufferPointer(buffer), path: "x.inter", fieldSeparator: [9], sequenceSeparator: " ", wanted: nil)
                return nil
            }
            catch let e as RecBenchError { return e } catch { return nil }
        }
        #expect(e?.location == "x.inter:3")
    }

    @Test func emptyFileAndMissingColumnAreErrors() {
        #expect(error("")?.location == "x.inter:1")
        #expect(error("u:token\n1\n", wanted: ["u", "timestamp"])?.field == "timestamp")
    }

    @Test func missingFileIsAnError() {
        #expect(throws: RecBenchError.file("/nonexistent/x.inter", "file not found")) {
            try AtomicFileReader.read(path: "/nonexistent/x.inter", fieldSeparator: "\t", sequenceSeparator: " ")
        }
    }
}

struct DatasetLoaderTests {
    @Test func idsFollowFirstAppearanceAndBothMapsAgree() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter([("u9", "b", 1), ("u1", "a", 2), ("u9", "a", 3)], in: dir)
        let d = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir)))
        #expect(d.userTokens == ["u9", "u1"])
        #expect(d.itemTokens == ["b", "a"])
        #expect(d.userIDs["u1"] == 1 && d.itemIDs["a"] == 1)
        #expect(d.interactions.users == [0, 1, 0])
        #expect(d.statistics.sparsity == 1 - 3.0 / 4)
    }

    @Test func preSplitFilesShareOneIdSpace() throws {
        // The same user and item tokens in train and test files are one id each; new tokens
        // in a later file come after every earlier one.
        let dir = Fixtures.temporaryDirectory()
        let folder = "\(dir)/tiny"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let header = "user_id:token\titem_id:token\ttimestamp:float\n"
        try (header + "u\ta\t1\nv\tb\t2\n").write(toFile: "\(folder)/tiny.train.inter", atomically: true, encoding: .utf8)
        try (header + "w\tb\t3\nu\tc\t4\n").write(toFile: "\(folder)/tiny.test.inter", atomically: true, encoding: .utf8)
        let cfg = try Fixtures.config(dataPath: dir, extra: ["benchmark_filename": .list([.string("train"), .string("test")])])
        let d = try DatasetLoader.load(DataSettings(cfg))
        #expect(d.userTokens == ["u", "v", "w"] && d.itemTokens == ["a", "b", "c"])
        #expect(d.interactions.users == [0, 1, 2, 0] && d.interactions.items == [0, 1, 1, 2])
        #expect(d.interactions.parts == [0, 0, 2, 2])
    }

    @Test func kCoreFilterIteratesToAFixedPoint() throws {
        // Users need ≥ 2 rows, items ≥ 2 rows. Dropping item z (1 row) leaves user c with one
        // row, which then drops item y below 2: only a, b with x survive.
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter([("a", "x", 1), ("b", "x", 2), ("a", "y", 3), ("c", "y", 4), ("c", "z", 5), ("b", "w", 6), ("a", "w", 7)], in: dir)
        let cfg = try Fixtures.config(dataPath: dir, extra: ["user_inter_num_interval": .string("[2,inf)"), "item_inter_num_interval": .string("[2,inf)")])
        let d = try DatasetLoader.load(DataSettings(cfg))
        #expect(Set(d.userTokens) == ["a", "b"])
        #expect(Set(d.itemTokens) == ["x", "w"])
        #expect(d.interactions.count == 4)
    }

    /// RecBole 1.2.1 drops a side-file id without interactions only when 0 is below the first
    /// interval's lower value, open or closed: "(0,inf)" keeps it, "[1,inf)" drops it.
    @Test func aSideFileIDWithoutInteractionsFollowsRecBolesLowerValue() throws {
        let dir = Fixtures.temporaryDirectory()
        let folder = Fixtures.writeInter([("a", "x", 1), ("b", "x", 2), ("a", "y", 3)], in: dir)
        try "item_id:token\tprice:float\nx\t1\ny\t2\nq\t3\n".write(toFile: "\(folder)/tiny.item", atomically: true, encoding: .utf8)
        func items(_ interval: String) throws -> Set<String> {
            let columns: ConfigValue = .map(["inter": .list([.string("user_id"), .string("item_id"), .string("timestamp")]),
                                             "item": .list([.string("item_id"), .string("price")])])
            let cfg = try Fixtures.config(dataPath: dir, extra: ["item_inter_num_interval": .string(interval), "load_col": columns])
            return Set(try DatasetLoader.load(DataSettings(cfg)).itemTokens)
        }
        #expect(try items("(0,inf)") == ["x", "y", "q"])
        #expect(try items("[1,inf)") == ["x", "y"])
        #expect(try items("[0,inf)") == ["x", "y", "q"])
    }

    @Test func duplicatesAreKeptOrReducedToFirstOrLast() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter([("a", "x", 5), ("a", "x", 1), ("a", "y", 3)], in: dir)
        let keep = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir)))
        #expect(keep.interactions.count == 3)
        let first = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir, extra: ["rm_dup_inter": .string("first")])))
        #expect(first.interactions.count == 2)
        #expect(first.interactions.timestamps!.sorted() == [1, 3])
        let last = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir, extra: ["rm_dup_inter": .string("last")])))
        #expect(last.interactions.timestamps!.sorted() == [3, 5])
    }

    @Test func fingerprintChangesWithTheData() throws {
        let dir1 = Fixtures.temporaryDirectory(), dir2 = Fixtures.temporaryDirectory()
        Fixtures.writeInter([("a", "x", 1)], in: dir1)
        Fixtures.writeInter([("a", "x", 2)], in: dir2)
        let f1 = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir1))).fingerprint
        let f1again = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir1))).fingerprint
        let f2 = try DatasetLoader.load(DataSettings(Fixtures.config(dataPath: dir2))).fingerprint
        #expect(f1 == f1again && f1 != f2)
        // The parse-free fingerprint a sweep uses agrees with the loaded one.
        #expect(try DatasetLoader.fingerprint(DataSettings(Fixtures.config(dataPath: dir1))) == f1)
    }

    @Test func missingDatasetNamesThePathsTried() throws {
        let dir = Fixtures.temporaryDirectory()
        let e = #expect(throws: RecBenchError.self) { try DatasetLoader.load(DataSettings(Fixtures.config(dataset: "nope", dataPath: dir))) }
        #expect(e?.location.hasSuffix("nope/nope.inter") == true)
    }
}
