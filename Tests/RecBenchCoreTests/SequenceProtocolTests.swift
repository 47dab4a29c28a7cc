import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// RecBole 1.2.1's sequential protocol: examples, split and evaluation rows.
struct SequenceProtocolTests {
    /// The hand-made log of `scripts/recbole-sequence-fixture.py` (rows out of time order, a
    /// tie, a one-interaction user, repeats).
    static let log: [(String, String, Double)] = [
        ("a", "i1", 5), ("a", "i2", 3), ("a", "i3", 3), ("a", "i4", 1), ("a", "i5", 9), ("a", "i1", 7),
        ("b", "i2", 4), ("c", "i3", 1), ("c", "i4", 2), ("d", "i5", 1), ("d", "i6", 2), ("d", "i7", 3),
        ("e", "i1", 1), ("e", "i2", 2), ("e", "i1", 3), ("e", "i3", 4), ("e", "i1", 5), ("e", "i4", 6),
        ("e", "i5", 7), ("e", "i6", 8), ("e", "i1", 9), ("e", "i7", 10), ("e", "i8", 11), ("e", "i1", 12),
        ("f", "i8", 1), ("f", "i7", 2), ("f", "i8", 3), ("f", "i6", 4),
    ]

    /// That script's output under RecBole 1.2.1 (MAX_ITEM_LIST_LENGTH 3, RS 0.8/0.1/0.1, TO):
    /// part, user, target, input (oldest first).
    static let recbole = """
        train c i4 i3|train d i6 i5|train e i2 i1|train e i1 i1 i2|train e i3 i1 i2 i1|train e i1 i2 i1 i3|train e i4 i1 i3 i1
        train e i5 i3 i1 i4|train e i6 i1 i4 i5|train e i1 i4 i5 i6|train e i7 i5 i6 i1|train f i7 i8|train a i2 i4|train a i3 i4 i2
        train a i1 i4 i2 i3|valid e i8 i6 i1 i7|valid f i8 i8 i7|valid a i1 i2 i3 i1|test d i7 i5 i6|test e i1 i1 i7 i8
        test f i6 i8 i7 i8|test a i5 i3 i1 i1
        """

    func plan(_ dir: String, _ extra: [String] = []) throws -> ExperimentPlan {
        try Experiment.plan(RunRequest(model: "FPMC", assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: TO}", "MAX_ITEM_LIST_LENGTH=3",
        ] + extra))
    }

    /// Every example of every part as "part user target input…", users in first-row order.
    func examples(_ outcome: Experiment.SplitOutcome, _ dataset: Dataset) -> [String] {
        let sequences = outcome.sequences!, log = sequences.log
        return SplitPart.allCases.flatMap { part in
            log.examples(of: part).map { p in
                let u = Int(log.users[Int(p)])
                let input = log.window(of: u, endingAt: Int(p), maxLength: sequences.maxLength).map { dataset.itemTokens[Int(log.items[$0])] }
                return ([part.name, dataset.userTokens[u], dataset.itemTokens[Int(log.items[Int(p)])]] + input).joined(separator: " ")
            }
        }
    }

    @Test func examplesAndSplitEqualRecBoles() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        let plan = try plan(dir)
        #expect(plan.evaluationProtocol == .nextItem && plan.evaluation.historyMask == HistoryMask.none)
        let dataset = try DatasetLoader.load(plan.data)
        var notices: [String] = []
        let outcome = try Experiment.splitAndTargets(dataset, plan: plan, logger: Logger(label: "test"), notices: &notices)
        let expected = Self.recbole.split(whereSeparator: { $0 == "|" || $0 == "\n" }).map { $0.trimmingCharacters(in: .whitespaces) }
        // RecBole lists users in the order of their first example's time; compare per part and user.
        func key(_ line: String) -> String { line.split(separator: " ").prefix(2).joined(separator: " ") }
        let got = examples(outcome, dataset)
        #expect(got.count == expected.count)
        for group in Set(expected.map(key)) {
            #expect(got.filter { key($0) == group } == expected.filter { key($0) == group }, "\(group)")
        }
        #expect(outcome.summary.train == 15 && outcome.summary.valid == 3 && outcome.summary.test == 4)
        // Evaluation rows: one per example, its item the one positive, nothing else.
        #expect(outcome.test.users.count == 4 && outcome.test.positives.nonzeroCount == 4)
        let testItems = (0..<4).map { dataset.itemTokens[Int(outcome.test.positives.columns(ofRow: $0).first!)] }
        #expect(testItems.sorted() == ["i1", "i5", "i6", "i7"])
        // Repeats: e's i1 and f's i6? f had no i6 before; a's i5 is new; e's i1 is a repeat.
        #expect(outcome.test.repeatPositives == 1)
        let queries = outcome.test.queries!
        let inputs = (0..<4).map { r in queries.window(r).map { dataset.itemTokens[Int(queries.sequences.log.items[$0])] }.joined(separator: " ") }
        #expect(Set(inputs) == ["i5 i6", "i1 i7 i8", "i8 i7 i8", "i3 i1 i1"])
    }

    @Test func ml100kCountsEqualRecBoles() throws {
        guard let shared = Fixtures.sharedRoot else { return }
        let plan = try Experiment.plan(RunRequest(model: "FPMC", configFiles: [Fixtures.repoRoot + "/Configs/ml-100k.yml"],
                                                  assignments: ["data_path=\(shared)/datasets/", "eval_args={order: TO}"]))
        let dataset = try DatasetLoader.load(plan.data)
        var notices: [String] = []
        let outcome = try Experiment.splitAndTargets(dataset, plan: plan, logger: Logger(label: "test"), notices: &notices)
        let s = outcome.summary
        #expect(s.train + s.valid + s.test == 99_057)
        #expect(s.train == 80_065 && s.valid == 9_496 && s.test == 9_496)
        #expect(outcome.valid.users.count == 9_496 && outcome.test.users.count == 9_496)
    }

    @Test func userProtocolReadsTheWholeSequenceBeforeThePart() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        let plan = try plan(dir, ["eval_protocol=user", "history_mask=seen"])
        #expect(plan.evaluationProtocol == .user && plan.evaluation.historyMask == .seen)
        let dataset = try DatasetLoader.load(plan.data)
        var notices: [String] = []
        let outcome = try Experiment.splitAndTargets(dataset, plan: plan, logger: Logger(label: "test"), notices: &notices)
        let queries = outcome.test.queries!, log = queries.sequences.log
        let a = Int(dataset.userIDs["a"]!)
        // a's six interactions split by ratio: 4 train (i4 i2 i3 i1), 1 valid (i1), 1 test (i5);
        // the test input is everything before the test item, truncated to the latest 3.
        let input = queries.window(a).map { dataset.itemTokens[Int(log.items[$0])] }
        #expect(input == ["i3", "i1", "i1"])
        #expect(outcome.test.positives.columns(ofRow: a).map { dataset.itemTokens[Int($0)] } == ["i5"])
    }

    // Bad and odd input.

    @Test func aSingleInteractionUserMakesNoExampleAndIsCounted() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        let plan = try plan(dir)
        let dataset = try DatasetLoader.load(plan.data)
        var notices: [String] = []
        let outcome = try Experiment.splitAndTargets(dataset, plan: plan, logger: Logger(label: "test"), notices: &notices)
        #expect(outcome.summary.usersWithoutExamples == 1)   // b
        #expect(notices.contains { $0.contains("1 users have a single interaction") })
        let b = dataset.userIDs["b"]!
        #expect(!outcome.test.queries!.users.contains(b) && !outcome.valid.queries!.users.contains(b))
    }

    @Test func aNonPositiveListLengthIsRefused() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        for value in ["0", "-3"] {
            let e = #expect(throws: RecBenchError.self) { try plan(dir, ["MAX_ITEM_LIST_LENGTH=\(value)"]) }
            #expect(e?.field == "MAX_ITEM_LIST_LENGTH")
        }
    }

    /// RecBole 1.2.1 loads a per-family layer under the user's files (quick_start_config/).
    @Test func withoutEvalArgsEachFamilyGetsRecBolesQuickStartDefaultsOrANote() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        func plan(_ model: String) throws -> ExperimentPlan {
            try Experiment.plan(RunRequest(model: model, assignments: ["dataset=tiny", "data_path=\(dir)"]))
        }
        let sequential = try plan("FPMC")
        #expect(sequential.split.order == .time && sequential.split.strategy == .leaveOneOut(validAndTest: true))
        #expect(sequential.config.origin(of: "eval_args").contains("quick_start_config/sequential.yaml"))
        let general = try plan("Pop")
        #expect(general.split.order == .random && general.split.strategy == .ratio([0.8, 0.1, 0.1]))
        #expect(general.config.origin(of: "eval_args") == "default" && general.recBoleNotes.isEmpty)
        // Context-aware: RecBole's defaults (no negatives, labeled AUC evaluation) are named, not applied.
        let fm = try plan("FM")
        #expect(fm.training.negativesPerPositive == 1)
        #expect(fm.recBoleNotes.contains { $0.contains("context-aware.yaml") && $0.contains("KeyError 'label'") && $0.contains("mode: labeled") })
        let told = try Experiment.plan(RunRequest(model: "FM", assignments: ["dataset=tiny", "data_path=\(dir)", "eval_args={order: TO}",
                                                                            "train_neg_sample_args={distribution: uniform, sample_num: 2}"]))
        #expect(told.recBoleNotes.count == 1 && told.recBoleNotes[0].contains("metrics [AUC, LogLoss]"), "\(told.recBoleNotes)")
        #expect(!told.recBoleNotes[0].contains("labeled") && !told.recBoleNotes[0].contains("KeyError"))
    }

    /// RecBole 1.2.1 reads more files for a dataset named `ml-100k`; recbench names them instead of applying
    /// them (RecBole skips absent columns, recbench stops on them), and only when no file sets `load_col`.
    @Test func aDatasetNamedML100kWithoutLoadColIsToldWhatRecBoleWouldRead() throws {
        func plan(_ model: String, _ extra: [String] = []) throws -> ExperimentPlan {
            try Experiment.plan(RunRequest(model: model, assignments: ["dataset=ml-100k", "data_path=\(Fixtures.repoRoot)/Datasets"] + extra))
        }
        let fm = try plan("FM")
        #expect(fm.config.origin(of: "load_col") == "default")
        #expect(fm.recBoleNotes.contains { $0.hasPrefix("dataset ml-100k:") && $0.contains("context-aware_ml-100k.yaml") && $0.contains("age") })
        let features = try plan("GRU4RecF").recBoleNotes.filter { $0.hasPrefix("dataset ml-100k:") }
        #expect(features.count == 1 && features[0].contains("special_sequential_on_ml-100k.yaml") && !features[0].contains("threshold"))
        let general = try plan("BPR").recBoleNotes.filter { $0.hasPrefix("dataset ml-100k:") }
        #expect(general.count == 1 && general[0].contains("rating, timestamp") && !general[0].contains("quick_start_config"))
        #expect(!(try plan("FM", ["load_col={inter: [user_id, item_id]}"])).recBoleNotes.contains { $0.hasPrefix("dataset ml-100k:") })
        let renamed = try Experiment.plan(RunRequest(model: "FM", assignments: ["dataset=tiny", "data_path=/nonexistent"]))
        #expect(!renamed.recBoleNotes.contains { $0.hasPrefix("dataset ml-100k:") })
    }

    /// RecBole's benchmark files for sequential models hold expanded examples (`item_id_list`);
    /// read as plain logs they would be a different log, so a sequential run refuses them.
    @Test(arguments: [("_list", [String]()), ("_seq", ["LIST_SUFFIX=_seq"])])
    func preExpandedBenchmarkFilesAreRefusedForSequencesOnly(suffix: String, extra: [String]) throws {
        let dir = Fixtures.temporaryDirectory(), folder = dir + "/tiny"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for part in ["train", "valid", "test"] {
            try "user_id:token\titem_id\(suffix):token_seq\titem_id:token\ttimestamp:float\na\ti1 i2\ti3\t3\nb\ti2\ti1\t4\n"
                .write(toFile: "\(folder)/tiny.\(part).inter", atomically: true, encoding: .utf8)
        }
        func run(_ model: String, _ more: [String]) throws {
            let plan = try Experiment.plan(RunRequest(model: model, assignments: [
                "dataset=tiny", "data_path=\(dir)", "benchmark_filename=[train,valid,test]", "eval_args={order: TO}",
                "load_col={inter: [user_id, item_id, timestamp]}", "topk=[1]", "metrics=[Hit]", "valid_metric=Hit@1"] + more))
            _ = try Experiment.load(plan, logger: Logger(label: "test"))
        }
        let e = #expect(throws: RecBenchError.self) { try run("FPMC", extra) }
        #expect(e?.location == "\(folder)/tiny.train.inter:1" && e?.field == "item_id\(suffix)" && e?.message.contains("pre-expanded") == true)
        try run("Pop", extra)   // a general model reads the files' interactions, as RecBole does
        if suffix == "_list" {   // null is the default (RecBole's general models never read it); empty would match every header
            try run("Pop", ["LIST_SUFFIX=~"])
            let empty = #expect(throws: RecBenchError.self) { try run("Pop", ["LIST_SUFFIX=''"]) }
            #expect(empty?.field == "LIST_SUFFIX")
            // It only decides refusals, so it is no part of a run's identity.
            let plans = try [[], ["LIST_SUFFIX=_seq"]].map { more in
                try Experiment.plan(RunRequest(model: "Pop", assignments: ["dataset=tiny", "data_path=\(dir)", "benchmark_filename=[train,valid,test]"] + more))
            }
            #expect(Experiment.runKey(plan: plans[0], datasetFingerprint: "f") == Experiment.runKey(plan: plans[1], datasetFingerprint: "f"))
        }
    }

    /// RecBole 1.2.1 unpacks three datasets from every split; recbench runs two parts and says so.
    @Test func aTwoPartSplitRunsAndSaysRecBoleWouldStop() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        func notes(_ split: String) throws -> [String] {
            try Experiment.plan(RunRequest(model: "Pop", assignments: ["dataset=tiny", "data_path=\(dir)", "eval_args=\(split)"])).recBoleNotes
        }
        #expect(try notes("{split: {RS: [0.8, 0.2]}}").contains { $0.hasPrefix("eval_args.split (--set) makes two parts: RecBole 1.2.1 needs three") })
        #expect(try notes("{split: {RS: [0.8, 0.1, 0.1]}}").isEmpty)
    }

    @Test func randomOrderIsRefusedWithRecBolesReason() throws {
        let dir = Fixtures.temporaryDirectory()
        Fixtures.writeInter(Self.log, in: dir)
        let e = #expect(throws: RecBenchError.self) { try plan(dir, ["eval_args.order=RO"]) }
        #expect(e?.message.contains("has to be 'TO'") == true && e?.field == "eval_args.order")
        // A general model under next-item rows needs the order too.
        let general = #expect(throws: RecBenchError.self) {
            try Experiment.plan(RunRequest(model: "Pop", assignments: ["dataset=tiny", "data_path=\(dir)", "eval_protocol=next-item",
                                                                       "eval_args.order=RO"]))
        }
        #expect(general?.message.contains("next-item evaluation reads") == true)
    }

    /// An item seen only in valid appears in the test input: like RecBole, whose item ids
    /// cover the whole file, it has its own (untrained) row and the run scores normally.
    @Test func anItemFirstSeenInValidIsReadAsItsOwnUntrainedRow() throws {
        let dir = Fixtures.temporaryDirectory()
        let g = (1...8).map { ("g", "i\($0)", Double($0)) } + [("g", "new", 9.0), ("g", "i1", 10.0)]
        Fixtures.writeInter(Self.log + g, in: dir)
        let plan = try plan(dir, ["epochs=2", "topk=[3]", "valid_metric=MRR@3"])
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.test.values.values.allSatisfy { $0.isFinite })
        let dataset = try DatasetLoader.load(plan.data)
        var notices: [String] = []
        let split = try Experiment.splitAndTargets(dataset, plan: plan, logger: Logger(label: "test"), notices: &notices)
        let new = Int(dataset.itemIDs["new"]!)
        #expect(split.split.trainMatrix.columnSums()[new] == 0)
        let queries = split.test.queries!, log = queries.sequences.log
        #expect((0..<queries.users.count).contains { r in queries.window(r).contains { log.items[$0] == Int32(new) } })
    }
}
