import Linalg
import Autodiff
import RecBenchSupport

/// Inverted dropout on activations while training (torch's `nn.Dropout`).
public enum Dropout {
    /// `x` with each entry zeroed with probability `rate` and the rest scaled by 1/(1 − rate);
    /// `x` itself when the rate is 0.
    public static func apply(_ x: Variable, rate: Float, tape: Tape, rng: inout SeededGenerator) -> Variable {
        mask(rate: rate, rng: &rng).map { tape.dropout(x, rate: $0.rate, seed: $0.seed) } ?? x   // one draw, as `mask` and `factors` take
    }

    /// As above while training (`rng` set: a model's `logits(…, dropout:)`); `x` in evaluation.
    public static func apply(_ x: Variable, rate: Float, tape: Tape, rng: inout SeededGenerator?) -> Variable {
        guard var draws = rng, rate > 0 else { return x }
        defer { rng = draws }
        return apply(x, rate: rate, tape: tape, rng: &draws)
    }

    /// The mask `apply` would draw (the same draw), for an op that drops its input out as it
    /// reads it; nil when the rate is 0.
    public static func mask(rate: Float, rng: inout SeededGenerator) -> DropoutMask? {
        rate > 0 ? DropoutMask(rate: rate, seed: rng.next()) : nil
    }

    /// The factors `apply` multiplies by (0 or 1/(1 − rate)), for an op that applies them itself;
    /// nil when the rate is 0. The same draws as `apply`.
    public static func factors(rows: Int, columns: Int, rate: Float, tape: Tape, rng: inout SeededGenerator) -> Matrix? {
        rate > 0 ? MLP.dropoutMask(rows: rows, columns: columns, rate: rate, rng: &rng, compute: tape.compute) : nil
    }
}
