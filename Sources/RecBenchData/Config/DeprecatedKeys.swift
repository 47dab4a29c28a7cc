import RecBenchSupport
/// Reads RecBole's deprecated negative-sampling keys as today's `train_neg_sample_args`.
///
/// RecBole 1.2.1 warns about `neg_sampling` / `training_neg_sample_num` and then ignores
/// them, keeping `train_neg_sample_args` (default: one uniform negative). A config that
/// still carries them meant them, so recbench applies them, unless the same layer also sets
/// `train_neg_sample_args` (which then wins, as the current key), and says so in one line.
public enum DeprecatedKeys {
    /// RecBole's deprecated names of `train_neg_sample_args`.
    public static let negativeSamplingAliases = ["neg_sampling", "training_neg_sample_num", "training_neg_sample_distribution"]

    /// The mapped value (nil: the layer's own `train_neg_sample_args` wins), where it came
    /// from, and the notice to print.
    struct Mapping {
        let value: ConfigValue?
        let origin: String
        let notice: String
    }

    /// RecBole 1.2.1's default for general and sequential models, which is also recbench's
    /// (one source: the key's declaration).
    static var recBoleDefault: ConfigValue { ConfigKeys.byName["train_neg_sample_args"]!.defaultValue }

    /// `recBoleDefault`: what RecBole 1.2.1 samples instead, for the model's family.
    static func negativeSampling(in layer: ConfigLayer, recBoleDefault: ConfigValue) throws -> Mapping? {
        guard let key = negativeSamplingAliases.first(where: { layer.values[$0] != nil }) else { return nil }
        let origin = layer.origin(of: key)
        let value = key == "neg_sampling" ? try fromNegSampling(layer.values[key]!, origin: origin)
                                          : try fromTrainingNegSample(layer, origin: origin)
        let head = "\(origin): '\(key)' is RecBole's deprecated name for train_neg_sample_args"
        if layer.values["train_neg_sample_args"] != nil {
            return Mapping(value: nil, origin: origin, notice: "\(head); train_neg_sample_args, set in the same file, is used instead")
        }
        let recBole = value == recBoleDefault ? "RecBole 1.2.1's default too"
            : recBoleDefault == .null
                ? "RecBole 1.2.1 would ignore it and keep its context-aware default, train_neg_sample_args: ~, and stop on data without a label column"
            : "RecBole 1.2.1 would ignore it and sample one uniform negative per positive"
        return Mapping(value: value, origin: "\(origin) (\(key))",
                       notice: "\(head): read as train_neg_sample_args: \(value) (\(recBole))")
    }

    /// `{uniform: N}` / `{popularity: N}` (optionally `dynamic: M`), or null / "None".
    static func fromNegSampling(_ value: ConfigValue, origin: String) throws -> ConfigValue {
        switch value {
        case .null: return .null
        case .string(let s) where s.lowercased() == "none": return .null
        case .map(let m):
            let distributions = m.keys.filter { $0 != "dynamic" }
            guard distributions.count == 1, let d = distributions.first, let n = m[d]?.intValue, n >= 0 else { break }
            if n == 0 { return .null }
            var args: [String: ConfigValue] = ["distribution": .string(d), "sample_num": .int(n)]
            if let candidates = m["dynamic"]?.intValue, candidates > 1 {
                args["dynamic"] = .bool(true)
                args["candidate_num"] = .int(candidates)
            }
            return .map(args)
        default: break
        }
        throw RecBenchError.config("neg_sampling", origin: origin, "expected {uniform: N}, {popularity: N} or null, got \(value)")
    }

    /// RecBole 0.2's `training_neg_sample_num` (+ `training_neg_sample_distribution`).
    static func fromTrainingNegSample(_ layer: ConfigLayer, origin: String) throws -> ConfigValue {
        let number = layer.values["training_neg_sample_num"] ?? .int(1)
        guard let n = number.intValue, n >= 0 else {
            throw RecBenchError.config("training_neg_sample_num", origin: origin, "expected a count ≥ 0, got \(number)")
        }
        if n == 0 { return .null }
        let distribution = layer.values["training_neg_sample_distribution"]?.stringValue ?? "uniform"
        return .map(["distribution": .string(distribution), "sample_num": .int(n)])
    }
}
