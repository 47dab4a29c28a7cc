import Foundation
import Testing
import RecBenchCore

struct CSVReaderTests {
    func records(_ text: String, delimiter: UInt8? = nil) throws -> [([String], Int)] {
        let path = Fixtures.temporaryDirectory() + "/x.csv"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        var reader = try CSVReader(path: path, delimiter: delimiter)
        var out: [([String], Int)] = []
        while let r = try reader.next() { out.append((r.fields, r.line)) }
        return out
    }

    @Test func quotedFieldsEscapesAndLineBreaks() throws {
        let r = try records("a,b,c\n1,\"x, y\",\"say \"\"hi\"\"\"\n2,\"two\nlines\",z\r\n3,,\n")
        #expect(r.map(\.0) == [["a", "b", "c"], ["1", "x, y", "say \"hi\""], ["2", "two\nlines", "z"], ["3", "", ""]])
        #expect(r.map(\.1) == [1, 2, 3, 5])   // the quoted line break moves later lines down
    }

    @Test func detectsTheDelimiterAndKeepsUnicode() throws {
        #expect(try records("id\tname\n1\t牛乳 1L\n").map(\.0) == [["id", "name"], ["1", "牛乳 1L"]])
        #expect(try records("id;name\n1;a,b\n").map(\.0) == [["id", "name"], ["1", "a,b"]])
        #expect(try records("\u{FEFF}id,x\n1,2\n")[0].0 == ["id", "x"])   // BOM skipped
    }

    @Test func strayQuotesAndUnclosedQuotesAreErrors() {
        #expect(throws: RecBenchError.self) { try records("a,b\n1,x\"y\n") }
        #expect(throws: RecBenchError.self) { try records("a,b\n1,\"open\n") }
        #expect(throws: RecBenchError.self) { try records("a,b\n1,\"q\"x\n") }
    }
}

struct TimestampTests {
    @Test func parsesNumbersAndDatesToUnixSeconds() {
        #expect(Timestamp.seconds("1711929600") == 1_711_929_600)
        #expect(Timestamp.seconds("1711929600.5") == 1_711_929_600.5)
        #expect(Timestamp.seconds("2024-04-01") == 1_711_929_600)            // 19,814 days after 1970-01-01
        #expect(Timestamp.seconds("2024/04/01 09:30") == 1_711_963_800)
        #expect(Timestamp.seconds("2024-04-01 09:30:00") == 1_711_963_800)
        #expect(Timestamp.seconds("2024-04-01T09:30:00Z") == 1_711_963_800)
        #expect(Timestamp.seconds("2024-04-01T09:30:00+09:00") == 1_711_931_400)   // 00:30 UTC
        #expect(Timestamp.seconds("1970-01-01") == 0)
        #expect(Timestamp.seconds("2000-03-01") == 951_868_800)
        #expect(Timestamp.seconds("2024-02-29") != nil)
    }

    @Test func rejectsWhatIsNotATime() {
        for bad in ["", "yesterday", "2023-02-29", "2024-13-01", "2024-04-01 25:00", "2024-04-01 09:30:00junk", "0x10", "inf"] {
            #expect(Timestamp.seconds(bad) == nil, "\(bad)")
        }
    }
}

struct ConverterTests {
    func write(_ files: [String: String]) throws -> String {
        let dir = Fixtures.temporaryDirectory()
        for (name, text) in files { try text.write(toFile: "\(dir)/\(name)", atomically: true, encoding: .utf8) }
        return dir
    }

    @Test func infersTypesAndConvertsDates() throws {
        let dir = try write(["i.csv": "user_id,item_id,timestamp,price,qty,note\n1,10,2024-04-01,1.5,2,hello\n2,11,2024-04-02,3,1,\"a, b\"\n"])
        let report = try CSVConverter.convert(ConversionSpec(name: "d", outputDirectory: dir + "/out", inputs: ["inter": dir + "/i.csv"]))
        let types = report.files[0].columns.map { "\($0.name):\($0.type.rawValue)" }
        #expect(types == ["user_id:token", "item_id:token", "timestamp:float", "price:float", "qty:token", "note:token"])
        let text = try String(contentsOfFile: dir + "/out/d.inter", encoding: .utf8)
        #expect(text == "user_id:token\titem_id:token\ttimestamp:float\tprice:float\tqty:token\tnote:token\n"
                        + "1\t10\t1711929600\t1.5\t2\thello\n2\t11\t1712016000\t3\t1\ta, b\n")
    }

    @Test func fieldMappingsRenameAndRetype() throws {
        let dir = try write(["i.csv": "uid,iid,when,qty\n1,10,5,2\n"])
        let spec = ConversionSpec(name: "d", outputDirectory: dir + "/out", inputs: ["inter": dir + "/i.csv"],
                                  fields: ["uid=user_id", "iid=item_id", "when=timestamp", "qty:float"])
        let report = try CSVConverter.convert(spec)
        #expect(report.files[0].columns.map(\.name) == ["user_id", "item_id", "timestamp", "qty"])
        #expect(report.files[0].columns[3].type == .float)
        // The result loads as a dataset.
        let cfg = try Fixtures.config(dataset: "d", dataPath: dir + "/out")
        #expect(try DatasetLoader.load(DataSettings(cfg)).interactions.count == 1)
    }

    @Test func aFailingFileLeavesNoOutputAtAll() throws {
        // The item file is fine, the user file is ragged: nothing may be written.
        let dir = try write(["i.csv": "user_id,item_id\n1,10\n", "it.csv": "item_id,name\n10,x\n", "u.csv": "user_id,age\n1\n"])
        #expect(throws: RecBenchError.self) {
            try CSVConverter.convert(ConversionSpec(name: "d", outputDirectory: dir + "/out",
                                                    inputs: ["inter": dir + "/i.csv", "item": dir + "/it.csv", "user": dir + "/u.csv"]))
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/out")) ?? []
        #expect(left.isEmpty, "left behind: \(left)")
    }

    @Test func existingOutputNeedsOverwrite() throws {
        let dir = try write(["i.csv": "user_id,item_id\n1,10\n"])
        var spec = ConversionSpec(name: "d", outputDirectory: dir + "/out", inputs: ["inter": dir + "/i.csv"])
        _ = try CSVConverter.convert(spec)
        #expect(throws: RecBenchError.self) { try CSVConverter.convert(spec) }
        spec.overwrite = true
        _ = try CSVConverter.convert(spec)
    }

    /// A value that starts with a double quote is written quoted, so that RecBole's pandas reads
    /// it back unchanged (checked against pandas by hand: '"限定" 減塩' from '\"\"\"限定\"\" 減塩\"'), and so does recbench.
    @Test func aValueThatStartsWithAQuoteIsWrittenQuoted() throws {
        let dir = try write(["i.csv": "item_id,name\n1,\"\"\"限定\"\" 減塩\"\n2,\"a \"\"b\"\"\"\n", "u.csv": "user_id,item_id\n1,1\n"])
        _ = try CSVConverter.convert(ConversionSpec(name: "d", outputDirectory: dir + "/out", inputs: ["inter": dir + "/u.csv", "item": dir + "/i.csv"]))
        let text = try String(contentsOfFile: dir + "/out/d.item", encoding: .utf8)
        #expect(text == "item_id:token\tname:token\n1\t\"\"\"限定\"\" 減塩\"\n2\ta \"b\"\n")
        let table = try AtomicFileReader.read(path: dir + "/out/d.item", fieldSeparator: "\t", sequenceSeparator: " ")
        #expect(try table.tokens("name") == ["\"限定\" 減塩", "a \"b\""])
    }

    @Test func tabsInsideValuesAreRejectedWithTheirLine() throws {
        let dir = try write(["i.csv": "user_id,item_id,note\n1,10,ok\n2,11,\"a\tb\"\n"])
        let e = #expect(throws: RecBenchError.self) {
            try CSVConverter.convert(ConversionSpec(name: "d", outputDirectory: dir + "/out", inputs: ["inter": dir + "/i.csv"]))
        }
        #expect(e?.location.hasSuffix("i.csv:3") == true && e?.field == "note")
    }
}

/// The shipped Mart-like sample: generator → CSV → converter → atomic files, byte for byte.
struct MartSampleTests {
    let folder = Fixtures.repoRoot + "/Datasets/mart-sample"

    @Test func generatorReproducesTheShippedCSVs() throws {
        let sample = MartSample()
        #expect(sample.interactions == (try String(contentsOfFile: folder + "/csv/interact.csv", encoding: .utf8)))
        #expect(sample.items == (try String(contentsOfFile: folder + "/csv/items.csv", encoding: .utf8)))
        #expect(sample.users == (try String(contentsOfFile: folder + "/csv/users.csv", encoding: .utf8)))
    }

    @Test func convertReproducesTheShippedAtomicFilesByteForByte() throws {
        let out = Fixtures.temporaryDirectory()
        _ = try CSVConverter.convert(ConversionSpec(
            name: "mart-sample", outputDirectory: out,
            inputs: ["inter": folder + "/csv/interact.csv", "item": folder + "/csv/items.csv", "user": folder + "/csv/users.csv"]))
        for suffix in ["inter", "item", "user"] {
            let made = FileManager.default.contents(atPath: "\(out)/mart-sample.\(suffix)")
            let shipped = FileManager.default.contents(atPath: "\(folder)/mart-sample.\(suffix)")
            #expect(made != nil && made == shipped, "mart-sample.\(suffix) differs")
        }
    }

    @Test func theSampleHasHeavyRepeatPurchases() throws {
        let plan = try Experiment.plan(RunRequest(model: "Pop", configFiles: [Fixtures.repoRoot + "/Configs/mart.yml"],
                                                  assignments: ["data_path=\(Fixtures.repoRoot)/Datasets/"]))
        let d = try DatasetLoader.load(plan.data)
        let pairs = Set(zip(d.interactions.users, d.interactions.items).map { Int($0) << 32 | Int($1) })
        #expect(d.userCount == 2_000 && d.itemCount == 2_000)
        #expect(Double(pairs.count) < 0.6 * Double(d.interactions.count))   // > 40 % of rows re-buy an item
    }

    /// The shop's RecBole config, the first document of mart.yml, plans unchanged on its own:
    /// TO split (its unused timestamp still orders the split), its metrics, two notes.
    @Test func theShopsConfigInMartYmlPlansUnchanged() throws {
        let text = try String(contentsOfFile: Fixtures.repoRoot + "/Configs/mart.yml", encoding: .utf8)
        let begin = try #require(text.range(of: "--- # the shop's config, verbatim\n"))
        let end = try #require(text.range(of: "--- # overrides for the shipped sample\n"))
        let path = Fixtures.temporaryDirectory() + "/seed.yml"
        try String(text[begin.upperBound..<end.lowerBound]).write(toFile: path, atomically: true, encoding: .utf8)
        let plan = try Experiment.plan(RunRequest(model: "EASE", configFiles: [path],
                                                  assignments: ["data_path=\(Fixtures.repoRoot)/Datasets/"], dataset: "mart-sample"))
        #expect(plan.evaluation.keys == ["recall@10", "mrr@10", "ndcg@10", "hit@10", "precision@10"])
        #expect(plan.split.order == .time)
        #expect(plan.data.unusedColumns == ["inter": ["timestamp"]])
        #expect(plan.notices.count == 2)
        #expect(plan.notices.contains { $0.contains("gpu_id") } && plan.notices.contains { $0.contains("'neg_sampling'") })
    }
}
