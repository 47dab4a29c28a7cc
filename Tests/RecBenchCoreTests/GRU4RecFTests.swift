import Foundation
import Logging
import Testing
import RecBenchCore

/// GRU4RecF through a whole run on the ring of `SequentialModelTests`, with each item's
/// class (its position's parity, and one token shared by all) in `.item`: it learns the next
/// item with a feature GRU beside the item GRU, under each pooling mode.
struct GRU4RecFTests {
    @Test(arguments: ["sum", "mean", "max"])
    func learnsTheRingWithItemFeatures(pooling: String) throws {
        let dir = Fixtures.temporaryDirectory()
        SequentialModelTests.ring(in: dir)
        let items = "item_id:token\tclass:token_seq\n" + (0..<8).map { "i\($0)\t\($0 % 2 == 0 ? "even" : "odd") all\n" }.joined()
        try items.write(toFile: "\(dir)/tiny/tiny.item", atomically: true, encoding: .utf8)
        let plan = try Experiment.plan(RunRequest(model: "GRU4RecF", assignments: [
            "dataset=tiny", "data_path=\(dir)", "load_col={inter: [user_id, item_id, timestamp], item: [item_id, class]}",
            "eval_args={split: {RS: [0.8, 0.1, 0.1]}, order: TO}", "metrics=[MRR]", "topk=[1]", "valid_metric=MRR@1", "pooling_mode=\(pooling)",
            "MAX_ITEM_LIST_LENGTH=5", "epochs=100", "stopping_step=100", "learning_rate=0.002", "train_batch_size=64", "threads=1",
            "checkpoint_dir=null",
        ]))
        let outcome = try Experiment.run(plan, logger: Logger(label: "test"))
        #expect(outcome.test.values["mrr@1"]! >= 0.95, "\(pooling): mrr@1 \(outcome.test.values["mrr@1"]!)")
    }
}
