import RecBenchSupport

/// How a split's rows are ranked (`eval_args.mode`): against every item, or RecBole's sampled
/// ranking, where each positive brings `negatives` drawn items the row has not had and the row
/// ranks its positives among them alone.
public enum RankingMode: Sendable, Equatable, CustomStringConvertible {
    /// Every item (RecBole's `full`).
    case full
    /// RecBole's `uniN` (uniform draws) or `popN` (popularity draws), N = `negatives`.
    case sampled(negatives: Int, byPopularity: Bool)
    /// RecBole's `labeled`: every row of the split scored on its own against its label, for the
    /// value metrics (AUC, LogLoss, MAE, RMSE); nothing is ranked.
    case labeled

    /// RecBole's spelling: `full`, `uni100`, `pop100`; nil for anything else.
    public init?(parsing name: String) {
        if name == "full" { self = .full; return }
        if name == "labeled" { self = .labeled; return }
        guard ["uni", "pop"].contains(name.prefix(3)), let n = Int(name.dropFirst(3)), n >= 1 else { return nil }
        self = .sampled(negatives: n, byPopularity: name.hasPrefix("pop"))
    }

    public var description: String {
        switch self {
        case .full: return "full"
        case .labeled: return "labeled"
        case .sampled(let n, let byPopularity): return "\(byPopularity ? "pop" : "uni")\(n)"
        }
    }

    /// `eval_args.mode`: one name for both evaluated splits, or RecBole 1.2's `{valid: …, test: …}`, where a
    /// split left out takes the other's mode (RecBole's rule; `{}` is full for both).
    public static func modes(_ value: ConfigValue?, origin: String) throws -> [SplitPart: RankingMode] {
        let key = "eval_args.mode"
        func mode(_ v: ConfigValue) throws -> RankingMode {
            guard let name = v.stringValue, let m = RankingMode(parsing: name) else {
                let zero = ["uni0", "pop0"].contains(v.stringValue ?? "") ? " (N 0 would rank the positives alone)" : ""
                throw RecBenchError.config(key, origin: origin,
                                           "expected full, labeled, uniN or popN (N ≥ 1 negatives per positive, e.g. uni100), got \(v)\(zero)")
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
            let modes: [SplitPart: RankingMode] = [.valid: try mode(perSplit["valid"] ?? either), .test: try mode(perSplit["test"] ?? either)]
            if (modes[.valid] == .labeled) != (modes[.test] == .labeled) {
                throw RecBenchError.config(key, origin: origin, "labeled for one split only: its value metrics and the other's ranking metrics "
                                           + "cannot share one metrics list (RecBole refuses the mix too); make both labeled or neither")
            }
            return modes
        case let name?:
            let m = try mode(name)
            return [.valid: m, .test: m]
        }
    }
}
