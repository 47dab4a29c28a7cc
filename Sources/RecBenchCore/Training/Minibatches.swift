extension LearnedModel {
    /// A copy of the model for loss closures, without the parameters: the graph reads them
    /// from the tape's leaves, and a copy holding their storage would make every in-place
    /// optimiser step copy every parameter first. Move the optimizer out of the model before
    /// taking this copy, for the same reason: a copy sharing it makes every step copy the
    /// moments.
    public var lossModel: Self {
        var model = self
        model.parameters = Parameters()
        return model
    }

    /// One optimiser step per batch. `loss` builds a batch's loss on a fresh tape whose leaves
    /// are the parameters (trainable where `trainable` says); the tape is released before the
    /// step, so the optimiser updates the parameters in place. Reports batch progress and
    /// returns the mean batch loss.
    public mutating func optimize(
        _ batches: [ArraySlice<Int>], with optimizer: inout (any Optimizer)?, context: FitContext,
        trainable: (String) -> Bool = { _ in true },
        loss: (Tape, [String: Variable], ArraySlice<Int>) -> Variable
    ) -> Double {
        var total = 0.0
        for (b, batch) in batches.enumerated() {
            let (value, grads) = { () -> (Double, [String: Matrix]) in
                let tape = Tape()
                let leaves = tape.leaves(parameters, trainable: trainable)
                let batchLoss = loss(tape, leaves, batch)
                tape.backward(batchLoss)
                return (Double(batchLoss.value.values[0]), gradients(leaves))
            }()
            optimizer!.step(&parameters, gradients: grads)
            total += value
            context.onBatch?(b + 1, batches.count)
        }
        return total / Double(max(1, batches.count))
    }
}
