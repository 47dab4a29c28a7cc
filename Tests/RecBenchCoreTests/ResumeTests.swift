import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// A fit that continues from a saved training state ends where an uninterrupted fit ends: the
/// same epochs' losses and validation values, the same parameters. The interruption is a
/// shorter fit (its last state saved at its end) taken up by the full one under the same run key.
struct ResumeTests {
    struct Fixture {
        let data: TrainingData, split: SplitData, dataset: Dataset
    }

    /// The strides log (a signal the models learn at these rates), split 0.8 / 0.1 / 0.1 in time.
    static func fixture() throws -> Fixture {
        let dir = Fixtures.temporaryDirectory()
        ValidationReuseTests.strides(in: dir)
        let ratios: ConfigValue = .list([.double(0.8), .double(0.1), .double(0.1)])
        let cfg = try Fixtures.config(dataPath: dir, extra: ["eval_args": .map(["order": .string("TO"), "split": .map(["RS": ratios])])])
        let d = try DatasetLoader.load(DataSettings(cfg))
        let split = SplitData(dataset: d, parts: try Splitter.split(d.interactions, userCount: d.userCount, settings: SplitSettings(cfg)))
        return Fixture(data: TrainingData(dataset: d, split: split), split: split, dataset: d)
    }

    /// `model` fitted for `epochs` with MRR@5 on the valid split as its validation metric.
    static func fit(_ model: String, _ overrides: [String: ConfigValue], on f: Fixture, epochs: Int, resume: TrainingResume?,
                    logger: Logger = Logger(label: "test")) throws -> any Recommender {
        let type = try ModelRegistry.model(named: model)
        var values = overrides
        for p in type.parameters where values[p.name] == nil { values[p.name] = p.defaultValue }
        let config = try Config(layers: [ConfigLayer(source: "test", values: values)], modelKeys: ModelRegistry.parameterNames)
        var fitted = try type.init(parameters: ModelParameters(config: config, declared: type.parameters))
        let split = f.split
        var context = FitContext(seed: 7, compute: Compute(threads: 2), logger: logger,
                                 training: TrainingSettings(epochs: epochs, learningRate: 0.01, stoppingStep: 3),
                                 validate: { scorer, compute in
                                     Evaluator.evaluate(scorer, split: split, part: .valid,
                                                        settings: EvaluationSettings(metrics: ["MRR"], cutoffs: [5], historyMask: .seen),
                                                        compute: compute)["mrr@5"] ?? 0
                                 })
        context.resume = resume
        try fitted.fit(f.data, context: context)
        return fitted
    }

    static func resume(in dir: String, identity: String = "run-a", build: String? = BuildIdentity.current) -> TrainingResume {
        TrainingResume(path: dir + "/model.training", interval: 1e-9, identity: identity, build: build)   // saved after every epoch
    }

    /// NeuMF (one Adam, dropout), RecVAE (two Adams, and a prior it keeps outside its parameters:
    /// its `resumed` hook) and LightGCN (graph propagation, pairwise negatives).
    @Test(arguments: [("NeuMF", [String: ConfigValue]()), ("RecVAE", [:]), ("LightGCN", ["learning_rate": .double(0.01)])])
    func aResumedFitEndsWhereAnUninterruptedOneEnds(model: String, overrides: [String: ConfigValue]) throws {
        let f = try Self.fixture(), dir = Fixtures.temporaryDirectory()
        let whole = try Self.fit(model, overrides, on: f, epochs: 9, resume: nil)
        _ = try Self.fit(model, overrides, on: f, epochs: 4, resume: Self.resume(in: dir))
        #expect(FileManager.default.fileExists(atPath: dir + "/model.training"))
        let resumed = try Self.fit(model, overrides, on: f, epochs: 9, resume: Self.resume(in: dir))
        let (a, b) = (try #require(whole.trainingSummary), try #require(resumed.trainingSummary))
        #expect(b.resumedAfter == 4 && a.resumedAfter == nil)
        #expect(a.epochs.map(\.loss) == b.epochs.map(\.loss), "\(model): losses \(a.epochs.map(\.loss)) against \(b.epochs.map(\.loss))")
        #expect(a.epochs.map(\.valid) == b.epochs.map(\.valid))
        #expect((a.bestEpoch, a.bestValid, a.stoppedEarly) == (b.bestEpoch, b.bestValid, b.stoppedEarly))
        let (users, items) = (f.dataset.userCount, f.dataset.itemCount)
        #expect(allScores(whole, users: users, items: items) == allScores(resumed, users: users, items: items), "\(model): scores differ")
    }

    /// A state saved under another run key, or cut short, is left alone: the fit starts from
    /// its first epoch (and says why) and ends as a fit without one does.
    @Test func aStateOfAnotherRunOrCutShortIsNotTakenUp() throws {
        let f = try Self.fixture(), dir = Fixtures.temporaryDirectory()
        let whole = try Self.fit("NeuMF", [:], on: f, epochs: 5, resume: nil)
        _ = try Self.fit("NeuMF", [:], on: f, epochs: 2, resume: Self.resume(in: dir, identity: "run-b"))
        let path = dir + "/model.training", bytes = try #require(FileManager.default.contents(atPath: path))
        let hugeHeader = Data("RBSTATE1\n".utf8) + Data([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
        for (label, content) in [("another run's", bytes), ("cut short", bytes.prefix(bytes.count / 2)), ("not a state", Data("x".utf8)),
                                 ("a header longer than the file", hugeHeader)] {
            try content.write(to: URL(fileURLWithPath: path))
            let notices = NoticeLog()
            let fresh = try Self.fit("NeuMF", [:], on: f, epochs: 5, resume: Self.resume(in: dir), logger: notices.logger)
            #expect(fresh.trainingSummary?.resumedAfter == nil, "\(label) state was taken up")
            #expect(fresh.trainingSummary?.epochs.map(\.loss) == whole.trainingSummary?.epochs.map(\.loss), "\(label)")
            #expect(notices.lines.contains { $0.contains(path) && $0.contains("not taken up") }, "\(label): \(notices.lines)")
        }
    }
}

extension ResumeTests {
    /// A state saved by another build of the same run is not continued (the run key names the
    /// version, not the build), nor listed as one to continue; the build that saved it continues it.
    @Test func aStateOfAnotherBuildIsNotTakenUp() throws {
        let f = try Self.fixture(), dir = Fixtures.temporaryDirectory(), path = dir + "/model.training"
        let whole = try Self.fit("NeuMF", [:], on: f, epochs: 4, resume: nil)
        _ = try Self.fit("NeuMF", [:], on: f, epochs: 2, resume: Self.resume(in: dir, build: "build-one"))
        let saved = try #require(FileManager.default.contents(atPath: path))
        #expect(SavedTrainingFile.epochs(at: path, build: "build-one") == 2)
        #expect(SavedTrainingFile.epochs(at: path, build: "build-two") == nil)
        #expect(SavedTrainingFile.epochs(at: path, build: nil) == nil)
        let notices = NoticeLog()
        let other = try Self.fit("NeuMF", [:], on: f, epochs: 4, resume: Self.resume(in: dir, build: "build-two"), logger: notices.logger)
        #expect(other.trainingSummary?.resumedAfter == nil)
        #expect(other.trainingSummary?.epochs.map(\.loss) == whole.trainingSummary?.epochs.map(\.loss))
        #expect(notices.lines.contains { $0.contains(path) && $0.contains("another build of recbench (build build-one") }, "\(notices.lines)")
        try saved.write(to: URL(fileURLWithPath: path))
        let same = try Self.fit("NeuMF", [:], on: f, epochs: 4, resume: Self.resume(in: dir, build: "build-one"))
        #expect(same.trainingSummary?.resumedAfter == 2)
        #expect(same.trainingSummary?.epochs.map(\.loss) == whole.trainingSummary?.epochs.map(\.loss))
    }

    /// The build id is the descriptor of the GNU note of type 3 among the segment's notes, each
    /// padded to four bytes; a segment cut short or without it gives none.
    @Test func theBuildIDIsReadFromItsNote() {
        func u32(_ v: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(v).littleEndian) { Array($0) } }
        let other = u32(5) + u32(4) + u32(1) + Array("Linux\0\0\0".utf8) + [1, 2, 3, 4]   // another note first, name padded to 8
        let id: [UInt8] = [0xde, 0xad, 0xbe, 0xef, 0x01]
        let build = u32(4) + u32(5) + u32(3) + Array("GNU\0".utf8) + id + [0, 0, 0]
        func parse(_ bytes: [UInt8]) -> [UInt8]? { bytes.withUnsafeBytes { BuildIdentity.gnuBuildID(notes: $0) } }
        #expect(parse(other + build) == id)
        #expect(parse(other) == nil)
        #expect(parse(other + Array(build.prefix(15))) == nil)
        #expect(parse(u32(4) + u32(5) + u32(1) + Array("GNU\0".utf8) + id + [0, 0, 0]) == nil, "a GNU note of another type")
        #if os(Linux)
        let current = BuildIdentity.current ?? ""
        #expect(current.count >= 16 && current.allSatisfy(\.isHexDigit), "this build's id: \(current)")
        #endif
    }

    /// A run that stored nothing started again takes up its finished state: no epoch trains, and the
    /// valid result is its best epoch's pass ranked again (the best epoch came before the state), equal
    /// to the first run's kept pass, as are its test metrics and epochs.
    @Test func aFinishedStateGivesTheRunsResultWithoutTraining() throws {
        let dir = Fixtures.temporaryDirectory()
        ValidationReuseTests.strides(in: dir)
        let plan = try Experiment.plan(RunRequest(model: "BPR", assignments: [   // its best epoch is 22 of 30 (ValidationReuseTests)
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}", "learning_rate=0.5", "embedding_size=8",
            "epochs=30", "stopping_step=30", "threads=2", "results_dir=\(dir)/out", "resume_interval=0.000001"]))
        let first = try Experiment.run(plan, logger: Logger(label: "test"), resumable: true).result
        let best = try #require(first.training?.bestEpoch)
        try #require(best < 30 && first.validFromEpoch == best, "the best epoch is the last: the re-ranked pass is not exercised")
        let second = try Experiment.run(plan, logger: Logger(label: "test"), resumable: true).result
        #expect(second.training?.resumedAfter == 30 && second.validFromEpoch == best)
        #expect(second.valid == first.valid && second.test == first.test && second.analyses == first.analyses)
        #expect(second.training?.epochs.map(\.loss) == first.training?.epochs.map(\.loss))
    }

    /// A learned model's run key reads `metric_decimal_place` (its early stopping compares there); EASE's does not.
    @Test func theDecimalPlacesAreInALearnedModelsRunKey() throws {
        func key(_ model: String, _ places: Int) throws -> String {
            Experiment.runKey(plan: try Experiment.plan(RunRequest(model: model, assignments: ["dataset=ml-100k", "metric_decimal_place=\(places)"])),
                              datasetFingerprint: "f")
        }
        #expect(try key("BPR", 4) != key("BPR", 6))
        #expect(try key("EASE", 4) == key("EASE", 6))
    }

    /// Adam refuses saved moments that fit no parameter (its step walks a moment with the parameter's length).
    @Test func adamRefusesMomentsOfAnotherShape() throws {
        var parameters = Parameters()
        parameters.add("w", Matrix(rows: 3, columns: 3))
        var adam = Adam(learningRate: 0.1)
        let moments = [("m:w", Matrix(rows: 2, columns: 2)), ("v:w", Matrix(rows: 2, columns: 2))]
        #expect(throws: RecBenchError.self) { try adam.restore(OptimizerState(kind: "adam", counts: ["w": 1], tensors: moments), parameters: parameters) }
        let fitting = [("m:w", Matrix(rows: 3, columns: 3)), ("v:w", Matrix(rows: 3, columns: 3))]
        try adam.restore(OptimizerState(kind: "adam", counts: ["w": 1], tensors: fitting), parameters: parameters)
        #expect(adam.saved.counts == ["w": 1])
    }

    /// A checkpoint naming a tensor twice is refused, not a crash.
    @Test func aTensorNamedTwiceIsRefused() throws {
        func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }
        let entry = u32(1) + Array("a".utf8) + u32(1) + u32(1) + withUnsafeBytes(of: Float(1)) { Array($0) }
        let path = Fixtures.temporaryDirectory() + "/twice.params"
        try Data(Array("RBCKPT1\n".utf8) + u32(2) + entry + entry).write(to: URL(fileURLWithPath: path))
        #expect(throws: RecBenchError.self) { try Checkpoint.read(path) }
    }
}

/// Collects a logger's lines.
final class NoticeLog: @unchecked Sendable {   // lines guarded by `lock`
    private let lock = NSLock()
    private var stored: [String] = []
    var lines: [String] { lock.withLock { stored } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(log: self) }
    }

    struct Handler: LogHandler {
        let log: NoticeLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? { get { metadata[key] } set { metadata[key] = newValue } }
        func log(event: LogEvent) { log.lock.withLock { log.stored.append("\(event.message)") } }
    }
}
