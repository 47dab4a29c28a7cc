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

    static func resume(in dir: String, identity: String = "run-a") -> TrainingResume {
        TrainingResume(path: dir + "/model.training", interval: 1e-9, identity: identity)   // saved after every epoch
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
        for (label, content) in [("another run's", bytes), ("cut short", bytes.prefix(bytes.count / 2)), ("not a state", Data("x".utf8))] {
            try content.write(to: URL(fileURLWithPath: path))
            let notices = NoticeLog()
            let fresh = try Self.fit("NeuMF", [:], on: f, epochs: 5, resume: Self.resume(in: dir), logger: notices.logger)
            #expect(fresh.trainingSummary?.resumedAfter == nil, "\(label) state was taken up")
            #expect(fresh.trainingSummary?.epochs.map(\.loss) == whole.trainingSummary?.epochs.map(\.loss), "\(label)")
            #expect(notices.lines.contains { $0.contains(path) && $0.contains("not taken up") }, "\(label): \(notices.lines)")
        }
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
        func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String, line: UInt) {
            log.lock.withLock { log.stored.append("\(message)") }
        }
    }
}
