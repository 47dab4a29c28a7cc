import RecBenchSupport
import RecBenchData
import RecBenchContract
/// Which items from earlier splits are excluded from a user's ranking (see DESIGN.md).
public enum HistoryMask: String, Sendable, CaseIterable, Codable {
    /// RecBole 1.2.1: earlier-split items minus the evaluated split's positives. Leaks the
    /// label on repeat-purchase data; kept for comparability.
    case recbole
    /// Every earlier-split item: repeats can never be recommended.
    case seen
    /// Nothing: honest repeat-aware evaluation.
    case none
}

extension HistoryMask {
    /// The one explanation of what `recbole` does on data with repeat purchases (run notices
    /// and reports both use it); `counts` says how many positives were seen earlier, if known.
    public static func repeatLeakWarning(counts: String? = nil) -> String {
        "`history_mask: recbole` on data with repeats\(counts.map { " (\($0))" } ?? ""): these items stay rankable while every other seen item is masked, "
            + "which inflates repeat hits; use `history_mask: none` or `seen` for honest figures"
    }
}

/// The evaluation protocol in one value: what is ranked, cut and reported.
public struct EvaluationSettings: Sendable, Equatable {
    /// Metric names in report order, as configured (RecBole spelling).
    public var metrics: [String]
    /// Cutoffs K, in report order.
    public var cutoffs: [Int]
    /// The history mask mode.
    public var historyMask: HistoryMask
    /// Users scored per batch at most.
    public var batchSize: Int
    /// Bytes one batch's block of scores may take (`eval_memory_mb`).
    public var blockMemory = 1 << 30
    /// Validation metric key, lower case (e.g. "mrr@10").
    public var validMetric: String
    /// Whether larger validation values are better.
    public var validMetricBigger: Bool
    /// Decimal places for printed tables.
    public var decimalPlaces: Int
    /// TailPercentage's tail definition (RecBole's `tail_ratio`).
    public var tailRatio: Double = 0.1
    /// `eval_protocol`: nil is `auto` (the plan picks by the model's family).
    public var evaluationProtocol: EvaluationProtocol?
    /// Whether a repeat-aware model's switch is read for the analyses (a pass of its own;
    /// early stopping's validation skips it).
    public var readsRepeatModes = true
    /// `eval_args.mode` of the valid and test splits.
    public var rankingModes: [SplitPart: RankingMode] = [.valid: .full, .test: .full]
    /// The value metrics of labelled evaluation (`eval_args.mode: labeled`), in report order; empty otherwise.
    public var valueMetrics: [ValueMetric] = []
    /// Whether both splits are evaluated on their labelled rows (value metrics) rather than ranked.
    public var isLabeled: Bool { !valueMetrics.isEmpty }

    /// A protocol description (used by tests and benchmarks).
    public init(metrics: [String], cutoffs: [Int], historyMask: HistoryMask = .recbole, batchSize: Int = 4096,
                validMetric: String? = nil, validMetricBigger: Bool = true, decimalPlaces: Int = 4) {
        self.metrics = metrics; self.cutoffs = cutoffs; self.historyMask = historyMask
        self.batchSize = batchSize
        self.validMetric = validMetric ?? MetricKey(metrics[0], k: cutoffs[0]).description
        self.validMetricBigger = validMetricBigger; self.decimalPlaces = decimalPlaces
    }

    /// Users per block of scores over `items`: `batchSize`, fewer when a block of that many
    /// rows would exceed `blockMemory` (at least one), so evaluation memory is bounded by the
    /// budget whatever the catalogue.
    public func usersPerBlock(items: Int) -> Int {
        max(1, min(batchSize, blockMemory / max(1, 4 * items)))
    }

    /// Reads and validates `metrics`, `topk`, `history_mask`, `valid_metric`, ….
    public init(_ config: Config) throws {
        if case .map(let args) = config["eval_args"] { rankingModes = try RankingMode.modes(args["mode"], origin: config.origin(of: "eval_args")) }
        (metrics, valueMetrics) = try Self.metricLists(config, labeled: rankingModes[.test] == .labeled)
        cutoffs = try config.intList("topk")
        if cutoffs.isEmpty || cutoffs.contains(where: { $0 < 1 }) {
            throw RecBenchError.config("topk", origin: config.origin(of: "topk"), "cutoffs must be positive integers, got \(config["topk"])")
        }
        let mask = try config.string("history_mask")
        guard let m = HistoryMask(rawValue: mask) else {
            throw RecBenchError.config("history_mask", origin: config.origin(of: "history_mask"), "expected recbole, seen or none, got '\(mask)'")
        }
        historyMask = m
        let protocolName = try config.string("eval_protocol")
        guard protocolName == "auto" || EvaluationProtocol(rawValue: protocolName) != nil else {
            throw RecBenchError.config("eval_protocol", origin: config.origin(of: "eval_protocol"),
                                       "expected auto, user or next-item, got '\(protocolName)'")
        }
        evaluationProtocol = EvaluationProtocol(rawValue: protocolName)
        batchSize = try config.int("eval_batch_size", atLeast: 1)
        blockMemory = try config.int("eval_memory_mb", atLeast: 1) << 20
        validMetricBigger = try config.bool("valid_metric_bigger")
        decimalPlaces = try config.int("metric_decimal_place", atLeast: 0)
        tailRatio = try config.double("tail_ratio")
        guard tailRatio > 0 else {
            throw RecBenchError.config("tail_ratio", origin: config.origin(of: "tail_ratio"), "must be positive, got \(tailRatio)")
        }
        let valid = try config.string("valid_metric").lowercased()
        let keys = valueMetrics.isEmpty ? Self.keys(metrics: metrics, cutoffs: cutoffs) : valueMetrics.map(\.key)
        guard keys.contains(valid) else {
            throw RecBenchError.config("valid_metric", origin: config.origin(of: "valid_metric"),
                                       "'\(valid)' is not among the computed metrics\(Suggestion.hint(for: valid, in: keys)) "
                                       + "(metrics × topk: \(keys.joined(separator: ", ")))")
        }
        validMetric = valid
        // RecBole 1.2.1 sets valid_metric_bigger from the metric whatever the config says (its `smaller` metrics).
        let bigger = ValueMetric(named: valid)?.biggerIsBetter ?? !["averagepopularity", "giniindex"].contains(MetricKey(parsing: valid)?.name ?? valid)
        if validMetricBigger != bigger && config.origin(of: "valid_metric_bigger") != "default" {
            throw RecBenchError.config("valid_metric_bigger", origin: config.origin(of: "valid_metric_bigger"),
                                       "is \(validMetricBigger), but a \(bigger ? "bigger" : "smaller") \(valid) is better (RecBole 1.2.1 sets "
                                       + "this key from valid_metric and ignores the config's value): remove it")
        }
        validMetricBigger = bigger
    }

    /// `metrics` split into ranking metrics (RecBole's names) and value metrics: the value metrics alone
    /// under labelled evaluation, the others alone otherwise (RecBole refuses the mix).
    static func metricLists(_ config: Config, labeled: Bool) throws -> (ranking: [String], value: [ValueMetric]) {
        let known = MetricRegistry.names, valueNames = ValueMetric.allCases.map(\.rawValue), origin = config.origin(of: "metrics")
        var ranking: [String] = [], value: [ValueMetric] = []
        for name in try config.stringList("metrics") {
            if let m = ValueMetric(named: name) {
                guard labeled else {
                    throw RecBenchError.config("metrics", origin: origin, "'\(name)' is a value metric, computed on labelled rows: it needs "
                                               + "eval_args.mode: labeled (and labels: threshold or a LABEL_FIELD column)")
                }
                value.append(m)
            } else if let canonical = known.first(where: { $0.lowercased() == name.lowercased() }) {
                guard !labeled else {
                    throw RecBenchError.config("metrics", origin: origin, "'\(name)' ranks items, but eval_args.mode is labeled, which scores each "
                                               + "labelled row on its own: use \(valueNames.joined(separator: ", ")) (RecBole refuses the mix too)")
                }
                ranking.append(canonical)
            } else {
                throw RecBenchError.config("metrics", origin: origin, "unknown metric '\(name)'\(Suggestion.hint(for: name, in: known + valueNames)) "
                                           + "(known: \((known + valueNames).joined(separator: ", ")))")
            }
        }
        if ranking.isEmpty && value.isEmpty { throw RecBenchError.config("metrics", origin: origin, "must list at least one metric") }
        return (ranking, value)
    }

    /// The same protocol cut down to the validation metric alone (one metric, one cutoff):
    /// what a search trial's early stopping reads after every epoch (a run's fit ranks at the
    /// full settings, its kept pass becoming the valid result). Its value is the same as in the full
    /// evaluation, since the best K items do not depend on how many more are selected.
    public var validationOnly: EvaluationSettings {
        var only = self
        only.readsRepeatModes = false
        if let key = MetricKey(parsing: validMetric), let name = metrics.first(where: { $0.lowercased() == key.name }) {
            only.metrics = [name]
            only.cutoffs = [key.k]
        } else if validMetric == GAUC.key {
            only.metrics = [GAUC.name]
            only.cutoffs = [cutoffs.min()!]   // the lists are still taken; the shortest costs least
        }
        return only
    }

    /// Report keys in order: for each metric, for each cutoff ("recall@10", "recall@20", …); the value
    /// metrics' keys ("auc", "logloss") under labelled evaluation.
    public var keys: [String] { isLabeled ? valueMetrics.map(\.key) : Self.keys(metrics: metrics, cutoffs: cutoffs) }

    /// One key per metric and cutoff (`ndcg@10`); GAUC, which has no cutoff, one key `gauc`.
    static func keys(metrics: [String], cutoffs: [Int]) -> [String] {
        metrics.flatMap { m in m == GAUC.name ? [GAUC.key] : cutoffs.map { MetricKey(m, k: $0).description } }
    }

    /// Whether GAUC is among the metrics (it reads every row's whole ranking).
    var computesGAUC: Bool { metrics.contains(GAUC.name) }
}
