import RecBenchContract

/// A model trained on RecBole's pairwise rows (BPR, LINE, the graph models): a batch of
/// `train_batch_size` rows holds batch size / `sample_num` train pairs, each once per drawn
/// negative (RecBole 1.2.1's `TrainDataLoader` and `Interaction.repeat`).
public protocol PairwiseModel: LearnedModel {}

extension PairwiseModel {
    public func examplesPerBatch(_ training: TrainingSettings) -> Int { training.pairsPerPairwiseBatch }
}

extension FitContext {
    /// The negatives a pairwise loss draws per positive, with a note when the config asks for
    /// none (RecBole 1.2.1 stops there: its batch has no negative item).
    @discardableResult
    public func pairwiseNegatives(model: String) -> Int { negativesDrawn(model: model, loss: "pairwise") }

    /// The negatives a `loss` ("pairwise", "pointwise") draws per positive: the config's, at least
    /// one, with a note when the config asks for none, or for popularity counted on every split.
    public func negativesDrawn(model: String, loss: String) -> Int {
        if training.negativesPerPositive == 0 {
            logger.notice("\(model): train_neg_sample_args is null, but its \(loss) loss needs a negative per positive: sampling 1 uniform negative")
        }
        if case .popularity(_, .recbole) = training.negativeDistribution {
            let note = "\(model): negatives are drawn by popularity counted over train, valid and test, as RecBole 1.2.1 counts it; "
                + "negative_popularity: train counts the train split only"
            logger.notice("\(note)")
        }
        return training.negativesDrawn
    }
}
