import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchEvaluation

/// Default against tuned: each tuned run beside the default run of its model on the same
/// split, with the paired test over users (`sweep --tune`).
extension Report {
    /// A tuned run and the default run it is compared with.
    public struct TunedPair: Sendable {
        public let dataset: String
        public let historyMask: HistoryMask
        public let tuned: Entry
        public let standard: Entry
        /// The paired t-test of `metric` (tuned − default) over the users both evaluated; nil
        /// without per-user values (a missing sidecar, or a metric that has none: list metrics,
        /// analyses, GAUC).
        public let outcome: Significance.Outcome?
    }

    /// Every tuned run with a default counterpart in its group: same model, same split, no
    /// tuning, the fewest other config differences (the searched keys aside).
    public func tunedPairs(metric: String) throws -> [TunedPair] {
        var pairs: [TunedPair] = []
        for g in groups where !g.isLabeled {   // one metric for every row: the ranked groups' sort key
            for tuned in g.entries {
                guard let tuning = tuned.result.tuning else { continue }
                let candidates = g.entries.filter { $0.result.tuning == nil && $0.result.model == tuned.result.model
                    && $0.result.splitFingerprint == tuned.result.splitFingerprint }
                func differences(_ e: Entry) -> Int {
                    Set(e.result.config.keys).union(tuned.result.config.keys).subtracting(tuning.values.keys)
                        .filter { e.result.config[$0] != tuned.result.config[$0] }.count
                }
                guard let standard = candidates.min(by: { differences($0) < differences($1) }) else { continue }
                var outcome: Significance.Outcome?
                if hasPerUserValues(metric), let a = try perUserValues(tuned, metric: metric), let b = try perUserValues(standard, metric: metric) {
                    let users = a.keys.filter { b[$0] != nil }.sorted()
                    outcome = Significance.pairedTTest(users.map { a[$0]! }, users.map { b[$0]! })
                }
                pairs.append(TunedPair(dataset: g.dataset, historyMask: g.historyMask, tuned: tuned, standard: standard, outcome: outcome))
            }
        }
        return pairs
    }

    /// Whether runs store `metric` per user: the per-user ranking metrics do; list metrics, the
    /// analyses and GAUC (weighted by each row's positives) have no column to pair.
    func hasPerUserValues(_ metric: String) -> Bool {
        guard let key = MetricKey(parsing: metric) else { return false }
        return MetricRegistry.ranking.contains { $0.name.lowercased() == key.name }
    }

    /// A run's per-user test values of `metric` by user (nil when its sidecar is missing).
    func perUserValues(_ entry: Entry, metric: String) throws -> [String: Double]? {
        let path = RunFiles(record: entry.path).perUser
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        guard let per = try? JSONDecoder().decode(PerUserResults.self, from: data) else {
            throw RecBenchError.file(path, "is not a recbench per-user file (cut short or edited?); rerun its run, or delete it to leave the run out")
        }
        guard let split = per.splits["test"], let column = split.values[metric] else {
            throw RecBenchError.file(path, field: metric, "no per-user values for this metric (is it a ranking metric of the run?)")
        }
        return Dictionary(uniqueKeysWithValues: zip(split.users, column))
    }

    /// The section's caption.
    var tunedCaption: String {
        "Each tuned run is the test run of a search on the valid split (`recbench tune`); p: paired t-test over users, tuned − default, uncorrected."
    }

    /// The default-against-tuned table: its header and one row of cells per tuned run (nil when
    /// there is none).
    func tunedTable() throws -> (header: [String], rows: [[String]])? {
        guard !overSeeds else { return nil }   // its test pairs one run with another: see `tunedOmitted`
        let metric = sortKey
        let pairs = try tunedPairs(metric: metric)
        guard !pairs.isEmpty else { return nil }
        let header = ["dataset · mask", "model", "default", "tuned", "Δ", "p", "tuned values", "trials (finished / pruned / failed)", "search s"]
        let rows = pairs.map { pair -> [String] in
            let t = pair.tuned.result.tuning!
            let (a, b) = (Report.value(pair.standard.result, metric), Report.value(pair.tuned.result, metric))
            let delta = a.flatMap { a in b.map { String(format: "%+.4f", $0 - a) } } ?? "–"
            let p = pair.outcome.map { $0.p < 0.0001 ? "< 0.0001" : String(format: "%.4f", $0.p) } ?? "–"
            let values = TuningRecord.describe(t.values)
            return ["\(pair.dataset) · \(pair.historyMask.rawValue)", pair.tuned.result.model, format(a, metric), format(b, metric), delta, p, values,
                    "\(t.trials) (\(t.finished) / \(t.pruned) / \(t.failed))", Report.seconds(t.searchSeconds)]
        }
        return (header, rows)
    }

    /// Why a report over seeds has no default-against-tuned table, when it holds tuned runs.
    var tunedOmitted: String? {
        overSeeds && groups.contains(where: { $0.entries.contains { $0.result.tuning != nil } })
            ? "default against tuned is left out over seeds (its p pairs one run's per-user values with another's): see the report without --over-seeds"
            : nil
    }

    /// The Markdown section (empty when there is no tuned run).
    public func tunedMarkdown() throws -> String {
        if let tunedOmitted { return "> **Note:** \(tunedOmitted).\n" }
        guard let table = try tunedTable() else { return "" }
        var out = ["### Default against tuned · test \(sortKey)\n", tunedCaption + "\n", "| " + table.header.joined(separator: " | ") + " |",
                   "|---|---|---:|---:|---:|---:|---|---|---:|"]
        out += table.rows.map { "| " + $0.joined(separator: " | ") + " |" }
        out.append("")
        return out.joined(separator: "\n")
    }

    /// The HTML section (empty when there is no tuned run).
    func tunedHTML() throws -> String {
        if let tunedOmitted { return "<p class=\"meta\">\(escape(tunedOmitted.prefix(1).uppercased() + tunedOmitted.dropFirst())).</p>" }
        guard let table = try tunedTable() else { return "" }
        return "<section><h2>Default against tuned · test \(escape(sortKey))</h2><p class=\"meta\">\(inlineMarkdown(tunedCaption))</p>"
            + "<div class=\"table-wrap\"><table><thead><tr>" + table.header.map { "<th>\(escape($0))</th>" }.joined() + "</tr></thead><tbody>"
            + table.rows.map { "<tr>" + $0.map { "<td>\(escape($0))</td>" }.joined() + "</tr>" }.joined() + "</tbody></table></div></section>"
    }
}
