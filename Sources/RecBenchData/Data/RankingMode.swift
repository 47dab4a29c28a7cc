import RecBenchSupport

/// How a split's rows are ranked (`eval_args.mode`): against every item, or RecBole's sampled
/// ranking, where each positive brings `negatives` drawn items the row has not had and the row
/// ranks its positives among them alone.
public enum RankingMode: Sendable, Equatable, CustomStringConvertible {
    /// Every item (RecBole's `full`).
    case full
    /// RecBole's `uniN` (uniform draws) or `popN` (popularity draws), N = `negatives`.
    case sampled(negatives: Int, byPopularity: Bool)

    /// RecBole's spelling: `full`, `uni100`, `pop100`; nil for anything else.
    public init?(parsing name: String) {
        if name == "full" { self = .full; return }
        guard ["uni", "pop"].contains(name.prefix(3)), let n = Int(name.dropFirst(3)), n >= 1 else { return nil }
        self = .sampled(negatives: n, byPopularity: name.hasPrefix("pop"))
    }

    public var description: String {
        switch self {
        case .full: return "full"
        case .sampled(let n, let byPopularity): return "\(byPopularity ? "pop" : "uni")\(n)"
        }
    }

    /// `eval_args.mode`: one name for both evaluated splits, or RecBole 1.2's `{valid: …, test: …}`, where a
    /// split left out takes the other's mode (RecBole's rule; `{}` is full for both).
    public static func modes(_ value: ConfigValue?, origin: String) throws -> [SplitPart: RankingMode] {
        let key = "eval_args.mode"
        func mode(_ v: ConfigValue) throws -> RankingMode {
            if v.stringValue == "labeled" {
                throw RecBenchError.config(key, origin: origin, "labeled evaluation scores labelled pairs for RecBole's value metrics (AUC, LogLoss, "
                                           + "MAE, RMSE), which recbench does not compute; use full, uniN or popN")
            }
            guard let name = v.stringValue, let m = RankingMode(parsing: name) else {
                let zero = ["uni0", "pop0"].contains(v.stringValue ?? "") ? " (N 0 would rank the positives alone)" : ""
                throw RecBenchError.config(key, origin: origin, "expected full, uniN or popN (N ≥ 1 negatives per positive, e.g. uni100), got \(v)\(zero)")
            }
            return m
        }
        switch value {
        case nil: return [.valid: .full, .test: .full]
        case .map(let perSplit)?:
            for entry in perSplit.keys where !["valid", "test"].contains(entry) {
                throw RecBenchError.config(key, origin: origin, "unknown entry '\(entry)' (expected valid and test)")
            }
            let either = perSplit["valid"] ?? perSplit["test"] ?? .string("full")
            return [.valid: try mode(perSplit["valid"] ?? either), .test: try mode(perSplit["test"] ?? either)]
        case let name?:
            let m = try mode(name)
            return [.valid: m, .test: m]
        }
    }
}
