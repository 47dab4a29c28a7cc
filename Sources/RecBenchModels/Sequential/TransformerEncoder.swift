import Foundation
import Linalg
import Autodiff
import RecBenchSupport
import RecBenchData
import RecBenchContract

/// RecBole's `TransformerEncoder` (SASRec, BERT4Rec): `n_layers` post-LN layers over packed
/// sequences (each sequence's real positions, one after another: RecBole masks its padded
/// keys, so its outputs at real positions are these, for a fifth less work on ml-100k), each
///
///     a = LN(x + dropout(MHA(x) W_o + b_o))          (MHA: softmax(QKᵀ/√d_h + M) V, weights dropped out)
///     y = LN(a + dropout(act(a W₁ + b₁) W₂ + b₂))     (act: gelu (erf), relu, swish, tanh or sigmoid)
///
/// Weights ~ N(0, initializer_range), biases 0, LayerNorm γ 1 and β 0, as RecBole's
/// `_init_weights`.
public struct TransformerEncoder: Sendable {
    let layers: Int, heads: Int, width: Int, inner: Int
    let hiddenDropout: Float, attentionDropout: Float
    let eps: Float
    let activation: String

    /// The keys both transformer models declare, with their RecBole defaults.
    public static func keys(dropout: Double) -> [ConfigKey] {
        [
            SharedKeys.layerCount(2),
            ConfigKey("n_heads", "int", .int(2), "Attention heads of a transformer layer (hidden_size must divide by it)."),
            SharedKeys.hiddenSize(64),
            ConfigKey("inner_size", "int", .int(256), "Width of a transformer layer's feed-forward block."),
            ConfigKey("hidden_dropout_prob", "float", .double(dropout), "Dropout on a transformer's embeddings and layer outputs."),
            ConfigKey("attn_dropout_prob", "float", .double(dropout), "Dropout on a transformer's attention weights."),
            ConfigKey("hidden_act", "gelu, relu, swish, tanh or sigmoid", .string("gelu"), "Activation of a transformer's feed-forward block."),
            ConfigKey("layer_norm_eps", "float", .double(1e-12), "ε of a transformer's layer normalisations."),
            ConfigKey("initializer_range", "float", .double(0.02), "Standard deviation of a transformer model's initial weights."),
        ]
    }

    public init(_ p: ModelParameters) throws {
        layers = try p.int("n_layers", in: 1...16)
        heads = try p.int("n_heads", in: 1...64)
        width = try p.int("hidden_size", in: 1...4096)
        guard width % heads == 0 else { throw p.conflict("n_heads", "hidden_size", "hidden_size \(width) is not a multiple of n_heads \(heads)") }
        inner = try p.int("inner_size", in: 1...65536)
        hiddenDropout = Float(try p.double("hidden_dropout_prob", in: 0...0.99))
        attentionDropout = Float(try p.double("attn_dropout_prob", in: 0...0.99))
        eps = Float(try p.double("layer_norm_eps", in: 0...1))
        activation = try p.choice("hidden_act", of: ["gelu", "relu", "swish", "tanh", "sigmoid"])
    }

    /// Adds every layer's parameters, named `encoder.<l>.…`.
    public func initialize(_ p: inout Parameters, std: Float, rng: inout SeededGenerator) {
        let d = width
        for l in 0..<layers {
            for (name, rows, columns) in [("query", d, d), ("key", d, d), ("value", d, d), ("output", d, d), ("ffn1", d, inner), ("ffn2", inner, d)] {
                p.add("encoder.\(l).\(name).weight", Initializer.normal(rows: rows, columns: columns, std: std, rng: &rng))
                p.add("encoder.\(l).\(name).bias", Matrix(rows: 1, columns: columns))
            }
            for norm in ["norm1", "norm2"] { LayerNormParameters.add("encoder.\(l).\(norm)", width: d, to: &p) }
        }
    }

    /// The encoded rows of `x` (packed: sequence s is `lengths[s]` consecutive rows), or only
    /// the rows listed in `reading`, in that order. The last layer's attention reads every row as a
    /// key and value but scores only the read rows as queries, and its output projection,
    /// feed-forward block and norms act on each row alone: all of it runs on the read rows only
    /// (SASRec reads one row of ~37, BERT4Rec its masked ones). In evaluation those rows get what
    /// a pass over every row gives them (up to the GEMMs' rounding for fewer rows); in training
    /// the last layer's dropout masks, on its attention weights too, cover the read rows only,
    /// so a run's draws differ from a full pass's (the same distribution).
    public func callAsFunction(_ x: Variable, lengths: [Int], causal: Bool, reading: [Int32]? = nil, _ p: [String: Variable], tape: Tape,
                        training: Bool, rng: inout SeededGenerator) -> Variable {
        var h = x
        let (ascending, order) = Self.ascending(reading)
        for l in 0..<layers {
            func linear(_ input: Variable, _ name: String) -> Variable {
                tape.linear(input, p["encoder.\(l).\(name).weight"]!, p["encoder.\(l).\(name).bias"]!)
            }
            func dropout(_ x: Variable) -> Matrix? {
                training ? Dropout.factors(rows: x.value.rows, columns: x.value.columns, rate: hiddenDropout, tape: tape, rng: &rng) : nil
            }
            let queries = l == layers - 1 ? ascending : nil
            let weights = AttentionKernels.Shape(lengths: lengths, heads: heads, width: width, queries: queries).weightCount
            let keep = training && attentionDropout > 0
                ? MLP.dropoutMask(rows: weights, columns: 1, rate: attentionDropout, rng: &rng, compute: tape.compute) : nil
            // Q, K and V from one 3D-wide product: one GEMM where three 64-wide ones ran slower.
            let names = ["query", "key", "value"].map { "encoder.\(l).\($0)" }
            let qkv = tape.linear(h, tape.concatColumns(names.map { p["\($0).weight"]! }), tape.concatColumns(names.map { p["\($0).bias"]! }))
            let context = tape.selfAttention(qkv: qkv, heads: heads, lengths: lengths, causal: causal, keep: keep, queries: queries)
            if let queries { h = tape.gather(h, rows: queries) }
            let attended = linear(context, "output")
            h = LayerNormParameters.apply("encoder.\(l).norm1", h, plus: attended, keep: dropout(attended), p, eps: eps, tape: tape)
            let fed = linear(activate(linear(h, "ffn1"), tape: tape), "ffn2")
            h = LayerNormParameters.apply("encoder.\(l).norm2", h, plus: fed, keep: dropout(fed), p, eps: eps, tape: tape)
        }
        return order.map { tape.gather(h, rows: $0) } ?? h
    }

    /// The distinct rows of `reading` in ascending order (the attention's queries), and where each
    /// row of `reading` is among them when that is not already the same list.
    static func ascending(_ reading: [Int32]?) -> ([Int32]?, [Int32]?) {
        guard let reading, !zip(reading, reading.dropFirst()).allSatisfy({ $0 < $1 }) else { return (reading, nil) }
        let rows = Array(Set(reading)).sorted()
        let index = Dictionary(uniqueKeysWithValues: rows.enumerated().map { ($1, Int32($0)) })
        return (rows, reading.map { index[$0]! })
    }

    func activate(_ x: Variable, tape: Tape) -> Variable {
        switch activation {
        case "relu": return tape.relu(x)
        case "swish": return tape.swish(x)
        case "tanh": return tape.tanh(x)
        case "sigmoid": return tape.sigmoid(x)
        default: return tape.gelu(x)
        }
    }

    /// Multiply-adds per sequence of `steps` positions, forward; with `reading`, the last
    /// layer past its Q, K and V products on that many rows only (as `callAsFunction(…reading:)` runs it).
    func multiplyAdds(steps: Double, reading: Double? = nil) -> Double {
        let (t, d, f) = (steps, Double(width), Double(inner))
        let perRow = 4 * d * d + 2 * d * f + 2 * t * d, afterAttention = d * d + 2 * d * f + 2 * t * d
        return Double(layers) * t * perRow - (reading.map { (t - $0) * afterAttention } ?? 0)
    }
}

/// A LayerNorm's γ (ones) and β (zeros), named `<prefix>.weight` and `<prefix>.bias`.
enum LayerNormParameters {
    static func add(_ prefix: String, width: Int, to p: inout Parameters) {
        p.add("\(prefix).weight", Matrix(rows: 1, columns: width, repeating: 1))
        p.add("\(prefix).bias", Matrix(rows: 1, columns: width))
    }

    static func apply(_ prefix: String, _ x: Variable, _ p: [String: Variable], eps: Float, tape: Tape, relu: Bool = false) -> Variable {
        tape.layerNorm(x, scale: p["\(prefix).weight"]!, shift: p["\(prefix).bias"]!, eps: eps, relu: relu)
    }

    /// LN(x + keep ⊙ y): a post-LN residual step with its dropout, in one op.
    static func apply(_ prefix: String, _ x: Variable, plus y: Variable, keep: Matrix?, _ p: [String: Variable], eps: Float, tape: Tape) -> Variable {
        tape.layerNorm(x, plus: y, keep: keep, scale: p["\(prefix).weight"]!, shift: p["\(prefix).bias"]!, eps: eps)
    }
}
