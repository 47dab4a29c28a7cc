import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// FPMC (Rendle et al. 2010, "Factorizing Personalized Markov Chains for Next-Basket
/// Recommendation") with baskets of one item, as RecBole 1.2.1 trains it.
///
///     for each train example (u, l → i), l the item before i, draw j ≠ i uniformly
///     x̂(u, l, i) = ⟨V_u^U, V_i^I⟩ + ⟨V_i^L, V_l^{IL}⟩        (taste + transition)
///     loss = −mean log σ(x̂(u, l, i) − x̂(u, l, j))            (BPR, Adam)
///     score(u, l, ·) = [V_u^U, V_l^{IL}] · [V^I, V^L]ᵀ          (one GEMM)
///
/// The two item tables are held side by side as one items × 2d table, each half
/// initialised as RecBole's (xavier normal over its n_items + 1 rows, padding included).
public struct FPMC: EncodedSequentialModel, NextItemLossModel {
    public static let name = "FPMC"
    public static let summary = "Factorised personalised Markov chain: the user's taste plus a transition from the last item, trained with BPR"
    public static let kind = ModelKind.factorisation
    /// RecBole's FPMC reads `loss_type` and trains BPR only ("Make sure 'loss_type' in ['BPR']!").
    public static let parameters: [ConfigKey] = [SharedKeys.embeddingSize(64), SharedKeys.lossType("BPR")]
    public static let testSettings: [[String: ConfigValue]] = [["embedding_size": .int(3)]]

    let embeddingSize: Int
    public var parameters = Parameters()
    public var trainingSummary: TrainingSummary?
    public var sequences: SequenceData?
    /// RecBole 1.2.1's FPMC trains with BPR only.
    public var lossType: NextItemLoss { .bpr }

    public init(parameters: ModelParameters) throws {
        embeddingSize = try parameters.int("embedding_size", in: 1...4096)
        _ = try parameters.choice("loss_type", of: ["BPR"])   // RecBole 1.2.1: "Make sure 'loss_type' in ['BPR']!"
    }

    public mutating func prepare(_ data: TrainingData, context: FitContext, rng: inout SeededGenerator) -> Parameters {
        prepareSequences(data, context: context)
        let (users, items, d) = (data.userCount, data.itemCount, embeddingSize)
        // RecBole's tables count a padding row: xavier over n + 1 rows.
        func xavier(_ rows: Int, _ columns: Int) -> Float { (2 / Float(rows + 1 + columns)).squareRoot() }
        var initial = Parameters()
        initial.add("user_embedding", Initializer.normal(rows: users, columns: d, std: xavier(users, d), rng: &rng))
        initial.add("last_item_embedding", Initializer.normal(rows: items, columns: d, std: xavier(items, d), rng: &rng))
        initial.add("item_embedding", Initializer.normal(rows: items, columns: 2 * d, std: xavier(items, d), rng: &rng))
        return initial
    }


    /// [V_u^U, V_l^{IL}] for each row's user u and last item l.
    public func encode(_ batch: SequenceBatch, _ p: [String: Variable], tape: Tape, training: Bool, rng: inout SeededGenerator) -> Variable {
        tape.concatColumns([tape.gather(p["user_embedding"]!, rows: batch.users),
                            tape.gather(p["last_item_embedding"]!, rows: batch.lastItems, padding: batch.padding)])
    }

    public func itemVectors(_ parameters: Parameters, itemCount: Int) -> Matrix { parameters["item_embedding"] }

    /// −mean log σ(x̂_i − x̂_j), `sample_num` draws j ≠ i per example, uniform by default (RecBole's
    /// repeatable sampler excludes only the example's own item).
    public func loss(_ batch: TrainingBatch, _ p: [String: Variable], tape: Tape, rng: inout SeededGenerator) -> Variable {
        let examples = SequenceBatch(examples: lossExamples(of: batch), of: sequences!)
        let encoded = encode(examples, p, tape: tape, training: true, rng: &rng)
        return NextItemLoss.bpr(encoded, p["item_embedding"]!, targets: examples.targets!,
                                items: sequences!.log.itemCount, negatives: batch.negativeItems, tape: tape, rng: &rng)
    }

    /// Per example: two gathers and two 2d-wide dots forward, their gradients ≈ 24·d;
    /// validation rows × items × 2d × 2.
    public func cost(_ s: WorkShape) -> ModelCost? {
        let d = Double(embeddingSize)
        let flops = 24 * Double(s.trainInteractions) * d * Double(s.negatives) + 4 * Double(s.users) * Double(s.items) * d
        return ModelCost(nominal: flops, executed: flops, scoringInner: 2 * embeddingSize)
    }
}
