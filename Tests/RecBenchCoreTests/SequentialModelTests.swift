import Foundation
import Logging
import Testing
import RecBenchCore
import Linalg

/// Each sequential model, through a whole run, learns what only the order tells: on a ring
/// of items walked from different starts, the next item follows from the last one.
struct SequentialModelTests {
    /// 24 users, each walking 10 steps around a ring of 8 items from their own start.
    static func ring(in dir: String) {
        var rows: [(String, String, Double)] = []
        for u in 0..<24 {
            for step in 0..<10 { rows.append(("u\(u)", "i\((u + step) % 8)", Double(step))) }
        }
        Fixtures.writeInter(rows, in: dir)
    }

    static let sequential = ModelRegistry.models.filter { $0.family == .sequential }.map { $0.name }

    @Test(arguments: sequential)
    func learnsTheRingsNextItem(model: String) throws {
        let dir = Fixtures.temporaryDirectory()
        Self.ring(in: dir)
        let plan = try Experiment.plan(RunRequest(model: model, assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp]}",
            "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: TO}", "metrics=[MRR]", "topk=[1]", "valid_metric=MRR@1",
            // Windows of 5 fill up in train, so BERT4Rec has trained every position it reads;
            // at 0.01 its post-LN transformer does not settle.
            "MAX_ITEM_LIST_LENGTH=5", "epochs=100", "stopping_step=100", "learning_rate=0.002", "train_batch_size=64", "threads=1",
            "checkpoint_dir=null",
        ]))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.result.evaluationProtocol == .nextItem && outcome.result.historyMask == HistoryMask.none)
        #expect(outcome.result.split.test == 24)
        #expect(outcome.test.values["mrr@1"]! >= 0.95, "\(model): mrr@1 \(outcome.test.values["mrr@1"]!)")
    }
}
