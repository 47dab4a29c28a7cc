import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// The results of a folder of runs, grouped by (dataset, history mask, evaluation protocol),
/// ready to render: user rows and next-item rows never share a table.
public struct Report: Sendable {
    /// One run in a table.
    public struct Entry: Sendable {
        /// The model plus the hyperparameters that vary between its runs in this group (and,
        /// over seeds, how many seeds the row averages).
        public let label: String
        public let result: RunResult
        public let path: String
        /// The runs this row averages (`--over-seeds`: the row's `result` holds their means); 1 for a run.
        public var runs = 1
        /// Each column's sample standard deviation over those runs (none for a single run).
        public var spread: [String: Double] = [:]
        /// The run keys of the runs the row stands for, by seed.
        public var runKeys: [String] { mergedKeys ?? [result.runKey] }
        /// The label without the seed count: the same setting's row under another history mask.
        public var setting: String { settingLabel ?? label }
        var mergedKeys: [String]?, settingLabel: String?
        /// The model's family (rows are grouped by it: general first).
        public var family: ModelFamily { result.modelFamily ?? .general }
    }

    /// The runs of one dataset under one mask mode, sorted.
    public struct Group: Sendable {
        public let dataset: String
        public let historyMask: HistoryMask
        /// What the group's rows averaged over: users, or next-item examples.
        public var evaluationProtocol: EvaluationProtocol = .user
        public let entries: [Entry]
        /// " · next-item examples" for next-item groups (titles say which rows a table averages).
        public var protocolSuffix: String { evaluationProtocol == .nextItem ? " · next-item examples" : "" }
        /// Whether the test split has repeat positives (then `recbole` mode inflates repeat hits).
        public var hasRepeats: Bool { entries.contains { $0.result.split.testRepeatPositives > 0 } }
        /// Runs evaluated on labelled rows (`eval_args.mode: labeled`): value metrics, no mask, no cutoff;
        /// sorted by `labeledSortKey` (best first).
        public var isLabeled = false
        public var labeledSortKey: String?
    }

    /// The groups, in dataset then mask order.
    public let groups: [Group]
    /// Runs whose last attempt failed (no stored result).
    public let failures: [FailedRun]
    /// The cutoff of the table's columns.
    public let k: Int
    /// The key rows are sorted by (descending).
    public let sortKey: String
    /// Decimal places of metric values in tables and CSV (the runs' `metric_decimal_place`).
    public var decimals = 4
    /// Whether runs that differ only in `seed` share a row (mean ± sample standard deviation).
    public var overSeeds = false

    /// Metric columns (the seed's table) at K.
    /// The sort key comes last when it is none of them (`--sort gauc`, `--sort map@10`): rows are never ordered by a hidden column.
    public var metricColumns: [String] {
        let seeds = ["recall", "mrr", "ndcg", "hit", "precision"].map { MetricKey($0, k: k).description }
        return seeds.contains(sortKey) || analysisColumns.contains(sortKey) ? seeds : seeds + [sortKey]
    }
    /// Analysis columns at K.
    public var analysisColumns: [String] {
        ["users_with_hit", "repeat_hit_share", "users_with_new_hit", "item_coverage"].map { MetricKey($0, k: k).description }
    }

    /// The columns of `g`'s table: under labelled evaluation the value metrics its runs hold, else the metrics and analyses at K.
    public func columns(_ g: Group) -> [String] {
        g.isLabeled ? ValueMetric.allCases.map(\.key).filter { key in g.entries.contains { Report.value($0.result, key) != nil } }
            : metricColumns + analysisColumns
    }

    /// Every group's columns, each once (a CSV's header).
    var allColumns: [String] {
        groups.reduce(into: metricColumns + analysisColumns) { all, g in all += columns(g).filter { !all.contains($0) } }
    }

    /// Whether a run was evaluated on labelled rows (its metrics are all value metrics).
    static func isLabeled(_ r: RunResult) -> Bool { !r.metricKeys.isEmpty && r.metricKeys.allSatisfy { ValueMetric(named: $0) != nil } }

    /// A labelled group's sort key: its runs' valid metric when they hold it, else the first value metric they hold.
    static func labeledSortKey(_ results: [RunResult]) -> String {
        let named = results.lazy.compactMap { $0.config["valid_metric"]?.stringValue?.lowercased() }.first { ValueMetric(named: $0) != nil }
        return named ?? ValueMetric.allCases.map(\.key).first { key in results.contains { $0.test[key] != nil } } ?? ValueMetric.auc.key
    }

    /// Reads every run record and failure record under `directory`.
    public static func load(directory: String, k requestedK: Int? = nil, sortKey requestedSort: String? = nil,
                            overSeeds: Bool = false) throws -> Report {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isFolder), isFolder.boolValue,
              let enumerator = FileManager.default.enumerator(atPath: directory) else {
            throw RecBenchError.file(directory, "no such results folder")
        }
        var results: [(RunResult, String)] = [], failures: [FailedRun] = []
        let decoder = JSONDecoder()
        for case let file as String in enumerator {
            if (file as NSString).lastPathComponent == RunFiles.searchFolder { enumerator.skipDescendants(); continue }
            let kind = RunFiles.kind(of: file)
            guard kind == .record || kind == .failure else { continue }
            let path = "\(directory)/\(file)"
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            if kind == .failure {
                if let f = try? decoder.decode(FailedRun.self, from: data) { failures.append(f) }
            } else if let r = try? decoder.decode(RunResult.self, from: data) {
                results.append((r, path))
            } else {
                throw RecBenchError.file(path, "is not a recbench result")
            }
        }
        // A failure superseded by a stored success of the same run is not a failure.
        let done = Set(results.map { $0.0.runKey })
        failures.removeAll { done.contains($0.runKey) }
        for i in failures.indices where failures[i].label == failures[i].model {   // not one point of a grid
            let f = failures[i]
            failures[i].rerunSince = results.contains { r, _ in
                r.model == f.model && r.dataset == f.dataset && r.tuning == nil && r.finishedAt >= f.finishedAt
            }
        }
        guard !results.isEmpty || !failures.isEmpty else { throw RecBenchError.file(directory, "holds no recbench results") }
        let k = requestedK ?? results.compactMap { r in r.0.metricKeys.lazy.compactMap(MetricKey.init(parsing:)).first?.k }.min() ?? 10
        let sortKey = (requestedSort ?? MetricKey("ndcg", k: k).description).lowercased()
        try checkRequest(results.map(\.0), k: requestedK, sortKey: requestedSort.map { _ in sortKey })
        let groups = grouped(results, sortKey: sortKey, overSeeds: overSeeds)
        var report = Report(groups: groups, failures: failures.sorted { ($0.dataset, $0.label) < ($1.dataset, $1.label) }, k: k, sortKey: sortKey)
        report.decimals = results.compactMap { $0.0.config["metric_decimal_place"]?.intValue }.max() ?? 4
        report.overSeeds = overSeeds
        return report
    }

    /// The runs in groups by (dataset, history mask, evaluation protocol), labelled runs apart; each group's
    /// rows by family, then best first by `sortKey` (a labelled group by its own value metric).
    static func grouped(_ results: [(RunResult, String)], sortKey: String, overSeeds: Bool) -> [Group] {
        func key(_ r: RunResult) -> String {   // labelled runs mask nothing: one group whatever their history_mask
            isLabeled(r) ? "\(r.dataset)\u{1}\(HistoryMask.recbole.rawValue)\u{1}\(EvaluationProtocol.user.rawValue)\u{1}labeled"
                : "\(r.dataset)\u{1}\(r.historyMask.rawValue)\u{1}\((r.evaluationProtocol ?? .user).rawValue)\u{1}ranked"
        }
        return Set(results.map { key($0.0) }).sorted().map { groupKey in
            let parts = groupKey.split(separator: "\u{1}").map(String.init)
            let members = results.filter { key($0.0) == groupKey }
            var entries = overSeeds ? mergedOverSeeds(members)
                : members.map { Entry(label: label(for: $0.0, among: members.map(\.0)), result: $0.0, path: $0.1) }
            let familyOrder = ModelFamily.allCases, labeled = parts[3] == "labeled"
            let by = labeled && ValueMetric(named: sortKey) == nil ? labeledSortKey(members.map(\.0)) : sortKey
            let sign = ValueMetric(named: by)?.biggerIsBetter == false ? -1.0 : 1.0
            entries.sort { a, b in
                let fa = familyOrder.firstIndex(of: a.family)!, fb = familyOrder.firstIndex(of: b.family)!
                if fa != fb { return fa < fb }
                let x = value(a.result, by).map { $0 * sign } ?? -.infinity, y = value(b.result, by).map { $0 * sign } ?? -.infinity
                return x != y ? x > y : a.label < b.label
            }
            var group = Group(dataset: parts[0], historyMask: HistoryMask(rawValue: parts[1]) ?? .recbole,
                              evaluationProtocol: EvaluationProtocol(rawValue: parts[2]) ?? .user, entries: entries)
            (group.isLabeled, group.labeledSortKey) = (labeled, labeled ? by : nil)
            return group
        }
    }

    /// A requested cutoff or sort key that no stored result holds is an error naming what the
    /// results do hold (a table of dashes, or rows in no order, would look like an answer).
    static func checkRequest(_ results: [RunResult], k: Int?, sortKey: String?) throws {
        guard !results.isEmpty else { return }
        let cutoffs = Set(results.flatMap { $0.metricKeys.compactMap { MetricKey(parsing: $0)?.k } }).sorted()
        if let k, !cutoffs.contains(k) {
            throw RecBenchError(field: "--k", "no stored result has cutoff \(k); the results hold @\(cutoffs.map(String.init).joined(separator: ", @"))")
        }
        let keys = Set(results.flatMap { Array($0.test.keys) + Array(($0.analyses["test"] ?? [:]).keys) })
        if let sortKey, !keys.contains(sortKey) {
            throw RecBenchError(field: "--sort", "no stored result holds \(sortKey)\(Suggestion.hint(for: sortKey, in: keys)); "
                                + "sortable: \(keys.sorted().joined(separator: ", "))")
        }
    }

    /// A test metric or analysis value of a run.
    public static func value(_ r: RunResult, _ key: String) -> Double? {
        r.test[key] ?? r.analyses["test"]?[key]
    }

    /// "EASE" or "EASE (reg_weight=100)" when the model has several runs that differ; a
    /// repeat baseline (which a sweep adds unasked on repeat data) says so.
    static func label(for r: RunResult, among all: [RunResult], ignoring ignored: Set<String> = [], adding extra: [String] = []) -> String {
        var name = ModelRegistry.models.first { $0.name == r.model }?.role == .repeatBaseline ? "\(r.model) (repeat baseline)" : r.model
        // A tuned run is never taken for a default one, whatever else the folder holds.
        if let tuning = r.tuning { name += " (tuned: best of \(tuning.trials) trials)" }
        let siblings = all.filter { $0.model == r.model }
        guard siblings.count > 1 else { return extra.isEmpty ? name : "\(name) (\(extra.joined(separator: ", ")))" }
        // Records an older recbench wrote stay in a folder a newer one adds to (their run keys differ): say which is which.
        var varying = Set(siblings.map(\.recbenchVersion)).count > 1 ? ["recbench \(r.recbenchVersion)"] : []
        // The same dataset name over different files (the data changed between runs): their rows must not read as one.
        if Set(siblings.map(\.datasetFingerprint)).count > 1 { varying.append("data \(r.datasetFingerprint.prefix(8))") }
        for key in r.hyperparameters.keys.sorted() where !ignored.contains(key)
            && Set(siblings.map { $0.hyperparameters[key]?.description ?? "" }).count > 1 {
            varying.append("\(key)=\(r.hyperparameters[key]!)")
        }
        let unshown = ConfigKeys.presentation.subtracting(["data_path"]).union(ignored)   // settings that change no metric (data_path may: shown)
        for key in r.config.keys.sorted() where !r.hyperparameters.keys.contains(key) && !unshown.contains(key)
            && Set(siblings.map { $0.config[key]?.description ?? "" }).count > 1 {
            varying.append("\(key)=\(r.config[key]!)")
        }
        varying += extra
        return varying.isEmpty ? name : "\(name) (\(varying.joined(separator: ", ")))"
    }

    /// One entry per model and setting, its runs that differ only in `seed` averaged (a record
    /// stored twice counted once): each test metric, analysis and time the mean over the runs
    /// (a value some run lacks is left out), beside each metric and analysis its sample standard
    /// deviation (n − 1; none for a single run). The row's other fields are its lowest seed's run.
    static func mergedOverSeeds(_ members: [(RunResult, String)]) -> [Entry] {
        let all = members.map(\.0)
        var order: [String] = [], bySetting: [String: [(RunResult, String)]] = [:]
        for m in members {
            let key = settingKey(m.0)
            if bySetting[key] == nil { order.append(key) }
            if bySetting[key]?.contains(where: { $0.0.runKey == m.0.runKey }) != true { bySetting[key, default: []].append(m) }
        }
        return order.map { key in
            let runs = bySetting[key]!.sorted { ($0.0.config["seed"]?.intValue ?? 0, $0.0.runKey) < ($1.0.config["seed"]?.intValue ?? 0, $1.0.runKey) }
            var mean = runs[0].0, spread: [String: Double] = [:], unused: [String: Double] = [:]
            mean.test = averaged(runs.map(\.0.test), spread: &spread)
            mean.analyses["test"] = averaged(runs.map { $0.0.analyses["test"] ?? [:] }, spread: &spread)
            mean.seconds = averaged(runs.map(\.0.seconds), spread: &unused)
            // A model that draws nothing keeps no seed in its record: one run stands for every seed.
            let seeds = runs.allSatisfy { $0.0.config["seed"] == nil } ? [] : [runs.count == 1 ? "1 seed" : "\(runs.count) seeds"]
            var entry = Entry(label: label(for: runs[0].0, among: all, ignoring: ["seed"], adding: seeds), result: mean, path: runs[0].1)
            entry.runs = runs.count
            entry.spread = spread
            entry.mergedKeys = runs.map(\.0.runKey)
            entry.settingLabel = label(for: runs[0].0, among: all, ignoring: ["seed"])
            return entry
        }
    }

    /// What makes runs one setting: the model, recbench's version, the data's fingerprint, a
    /// tuned run's search, and every result-relevant config value and hyperparameter but `seed`.
    static func settingKey(_ r: RunResult) -> String {
        let config = r.config.filter { $0.key != "seed" && !ConfigKeys.presentation.contains($0.key) }
        let parameters = r.hyperparameters.filter { $0.key != "seed" }
        func text(_ values: [String: ConfigValue]) -> String { values.keys.sorted().map { "\($0)=\(values[$0]!)" }.joined(separator: "\u{1}") }
        return [r.model, r.recbenchVersion, r.datasetFingerprint, r.tuning.map { "\(TuningRecord.describe($0.values)) \($0.trials)" } ?? "",
                text(config), text(parameters)].joined(separator: "\u{2}")
    }

    /// The mean of each key every one of `values` holds; its sample standard deviation into `spread`.
    static func averaged(_ values: [[String: Double]], spread: inout [String: Double]) -> [String: Double] {
        let keys = values.dropFirst().reduce(Set(values.first?.keys ?? [:].keys)) { $0.intersection($1.keys) }
        var means: [String: Double] = [:]
        for key in keys {
            let xs = values.map { $0[key]! }, mean = xs.reduce(0, +) / Double(xs.count)
            means[key] = mean
            if xs.count > 1 { spread[key] = (xs.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(xs.count - 1)).squareRoot() }
        }
        return means
    }

    /// Said of a failure that a later run of its model has replaced in the tables.
    static func rerunNote(_ f: FailedRun) -> String { "since run again with other settings: \(f.model)'s row above is that run" }

    /// Whether a column's best value is the largest (repeat share has no "better").
    static func higherIsBetter(_ column: String) -> Bool { !column.hasPrefix("repeat_hit_share") }

    /// The best value of `column` in `group`, for bold marking (a value metric's least loss where it is one).
    func best(_ column: String, in group: Group) -> Double? {
        guard Report.higherIsBetter(column) else { return nil }
        let values = group.entries.compactMap { Report.value($0.result, column) }
        return ValueMetric(named: column)?.biggerIsBetter == false ? values.min() : values.max()
    }

    /// Counts as integers, everything else at `decimals` places; "–" when absent.
    func format(_ v: Double?, _ column: String, missing: String = "–") -> String {
        guard let v else { return missing }
        return Report.isCount(column) ? String(Int(v.rounded())) : String(format: "%.\(decimals)f", v)
    }

    /// A table cell: the value, and ± its spread when the row averages runs.
    func cell(_ e: Entry, _ column: String) -> String {
        let text = mean(e, column)
        guard let sd = e.spread[column] else { return text }
        return "\(text) ± " + (Report.isCount(column) ? String(format: "%.1f", sd) : String(format: "%.\(decimals)f", sd))
    }

    /// A row's value of `column`: a count averaged over runs keeps one decimal.
    func mean(_ e: Entry, _ column: String, missing: String = "–") -> String {
        let v = Report.value(e.result, column)
        guard e.runs > 1, Report.isCount(column), let v else { return format(v, column, missing: missing) }
        return String(format: "%.1f", v)
    }

    /// Columns that count users.
    static func isCount(_ column: String) -> Bool {
        column.hasPrefix("users_with_hit@") || column.hasPrefix("users_with_new_hit@")
    }

    /// Seconds as shown in every table: three decimals below 0.1 s, else two.
    static func seconds(_ s: Double) -> String { s < 0.1 ? String(format: "%.3f", s) : String(format: "%.2f", s) }

    /// Fit and evaluation seconds of a run.
    static func fitAndEvalSeconds(_ r: RunResult) -> (fit: Double, eval: Double) {
        (r.seconds["fit"] ?? 0, (r.seconds["evaluate_valid"] ?? 0) + (r.seconds["evaluate_test"] ?? 0))
    }

    /// The heading and the mask caveat of a group.
    func caption(_ g: Group) -> (title: String, warning: String?) {
        if g.isLabeled {
            return ("\(g.dataset) · labelled rows (eval_args.mode: labeled) · test" + (overSeeds ? " · mean ± sd over seeds" : "")
                    + " · sorted by \(g.labeledSortKey ?? ValueMetric.auc.key)", nil)
        }
        let title = "\(g.dataset) · history mask \(g.historyMask.rawValue)\(g.protocolSuffix) · test @\(k)"
            + (overSeeds ? " · mean ± sd over seeds" : "") + " · sorted by \(sortKey)"
        let warning = g.historyMask == .recbole && g.hasRepeats
            ? HistoryMask.repeatLeakWarning()
            : nil
        return (title, warning)
    }

    // MARK: Markdown, CSV, JSON, LaTeX

    /// Markdown tables, best values in bold, then failures.
    public func markdown() -> String {
        var out: [String] = []
        for g in groups {
            let (title, warning) = caption(g)
            out.append("### \(title)\n")
            if let warning { out.append("> **Note:** \(warning)\n") }
            let columns = columns(g)
            out.append("| model | " + columns.joined(separator: " | ") + " | family | type | fit s | eval s |")
            out.append("|---|" + columns.map { _ in "---:" }.joined(separator: "|") + "|---|---|---:|---:|")
            for e in g.entries {
                let cells = columns.map { c -> String in
                    let v = Report.value(e.result, c)
                    return v != nil && v == best(c, in: g) ? "**\(cell(e, c))**" : cell(e, c)
                }
                let (fit, eval) = Report.fitAndEvalSeconds(e.result)
                out.append("| \(e.label) | " + cells.joined(separator: " | ")
                           + " | \(e.family.rawValue) | \(e.result.modelType.rawValue) | \(Report.seconds(fit)) | \(Report.seconds(eval)) |")
            }
            out.append("")
        }
        do { let tuned = try tunedMarkdown(); if !tuned.isEmpty { out.append(tuned) } } catch {
            out.append("> **Note:** default against tuned not shown: \(error)\n")
        }
        if !failures.isEmpty {
            out.append("### Failed runs\n")
            for f in failures { out.append("- \(f.dataset) · **\(f.label)** — \(f.error)" + (f.rerunSince ? " *(\(Report.rerunNote(f)))*" : "")) }
            out.append("")
        }
        return out.joined(separator: "\n")
    }

    /// One CSV row per run: counts as integers, metrics at `decimals` places (the JSON
    /// report and the run records keep full precision). Over seeds: a row per setting, its
    /// number of runs, each column's standard deviation beside the means, the run keys joined by ";".
    public func csv() -> String {
        let columns = allColumns, spreadColumns = overSeeds ? columns.map { "\($0)_sd" } : []
        var lines = ["dataset,history_mask,model,label,family,type," + (overSeeds ? "runs," : "") + (columns + spreadColumns).joined(separator: ",")
                     + ",fit_seconds,eval_seconds,run_key"]
        for g in groups {
            for e in g.entries {
                let r = e.result
                let values = columns.map { mean(e, $0, missing: "") }
                let spreads = overSeeds ? columns.map { c in e.spread[c].map { String(format: "%.\(decimals)f", $0) } ?? "" } : []
                let (fit, eval) = Report.fitAndEvalSeconds(r)
                lines.append(([CSVText.escape(g.dataset), g.historyMask.rawValue, r.model, CSVText.escape(e.label), e.family.rawValue, r.modelType.rawValue]
                              + (overSeeds ? [String(e.runs)] : []) + values + spreads
                              + [String(format: "%.3f", fit), String(format: "%.3f", eval), e.runKeys.joined(separator: ";")])
                    .joined(separator: ","))
            }
        }
        for f in failures {
            lines.append(([CSVText.escape(f.dataset), "", f.model, CSVText.escape(f.label), "", "failed"] + (overSeeds ? [""] : [])
                          + (columns + spreadColumns).map { _ in "" } + ["", "", f.runKey]).joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The groups as JSON (rows with every column, and failures).
    public func json() throws -> String {
        struct Row: Encodable {
            let label: String, model: String, family: String, type: String
            let values: [String: Double], seconds: [String: Double], runKey: String, path: String
            /// Over seeds only: the runs averaged, each value's standard deviation, their run keys.
            var runs: Int?, spread: [String: Double]?, runKeys: [String]?
        }
        struct GroupJSON: Encodable { let dataset: String, historyMask: String, warning: String?, rows: [Row] }
        struct ReportJSON: Encodable { let k: Int, sortKey: String, groups: [GroupJSON], failures: [FailureJSON] }
        /// A failure record with the report's word on it.
        struct FailureJSON: Encodable {
            let run: FailedRun
            enum Keys: String, CodingKey { case rerunSince = "rerun_since" }
            func encode(to encoder: Encoder) throws {
                try run.encode(to: encoder)
                var c = encoder.container(keyedBy: Keys.self)
                try c.encode(run.rerunSince, forKey: .rerunSince)
            }
        }
        let encoded = groups.map { g in
            let columns = columns(g)
            return GroupJSON(dataset: g.dataset, historyMask: g.historyMask.rawValue, warning: caption(g).warning,
                      rows: g.entries.map { e in
                          Row(label: e.label, model: e.result.model, family: e.family.rawValue, type: e.result.modelType.rawValue,
                              values: Dictionary(uniqueKeysWithValues: columns.compactMap { c in Report.value(e.result, c).map { (c, $0) } }),
                              seconds: e.result.seconds, runKey: e.result.runKey, path: e.path,
                              runs: overSeeds ? e.runs : nil, spread: overSeeds ? e.spread.filter { columns.contains($0.key) } : nil,
                              runKeys: overSeeds ? e.runKeys : nil)
                      })
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let report = ReportJSON(k: k, sortKey: sortKey, groups: encoded, failures: failures.map(FailureJSON.init))
        return String(decoding: try encoder.encode(report), as: UTF8.self) + "\n"
    }

    /// LaTeX tables (booktabs), best values in bold.
    public func latex() -> String {
        func esc(_ s: String) -> String {
            s.replacingOccurrences(of: "\\", with: "\\textbackslash{}").replacingOccurrences(of: "_", with: "\\_")
                .replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "&", with: "\\&").replacingOccurrences(of: "#", with: "\\#")
        }
        var out: [String] = []
        for g in groups {
            let (title, warning) = caption(g), columns = columns(g)
            out.append("% \(title)" + (warning != nil ? " — repeat hits inflated (history mask recbole)" : ""))
            out.append("\\begin{table}[t]\n\\centering\n\\small")
            out.append("\\begin{tabular}{l" + String(repeating: "r", count: columns.count) + "l}\n\\toprule")
            out.append("Model & " + columns.map { esc($0) }.joined(separator: " & ") + " & Type \\\\\n\\midrule")
            for (n, e) in g.entries.enumerated() {
                if n > 0 && e.family != g.entries[n - 1].family { out.append("\\midrule") }   // families apart
                let cells = columns.map { c -> String in
                    let v = Report.value(e.result, c), text = cell(e, c).replacingOccurrences(of: "±", with: "$\\pm$")
                    return v != nil && v == best(c, in: g) ? "\\textbf{\(text)}" : text
                }
                out.append("\(esc(e.label)) & " + cells.joined(separator: " & ") + " & \(e.result.modelType.rawValue) \\\\")
            }
            out.append("\\bottomrule\n\\end{tabular}")
            out.append((g.isLabeled ? "\\caption{\(esc(g.dataset)), test, labelled rows (value metrics)"
                        : "\\caption{\(esc(g.dataset)), test @\(k), history mask \\texttt{\(g.historyMask.rawValue)}\(esc(g.protocolSuffix))")
                       + (overSeeds ? "; mean $\\pm$ sample standard deviation over seeds" : "") + ".}")
            out.append("\\end{table}\n")
        }
        return out.joined(separator: "\n")
    }

    // MARK: Significance

    /// Pairwise paired tests of `metric` between the runs of each group (same split only).
    public struct Comparison: Sendable {
        public let dataset: String
        public let historyMask: HistoryMask
        public let labels: [String]
        /// outcomes[i][j] for i ≠ j (nil on the diagonal or when the users differ).
        public let outcomes: [[Significance.Outcome?]]
        /// Corrected p-values, same shape.
        public let adjusted: [[Double?]]
    }

    /// Runs the paired test `test` ("t" or "wilcoxon") on per-user `metric` values.
    public func significance(metric requested: String, test: String, correction: Significance.Correction) throws -> [Comparison] {
        let metric = requested.lowercased(), names = Set(MetricRegistry.ranking.map { $0.name.lowercased() })
        let ranking = Set(groups.flatMap { $0.entries.flatMap { $0.result.metricKeys } }
            .filter { MetricKey(parsing: $0).map { names.contains($0.name) } ?? false })
        guard ranking.contains(metric) else {
            throw RecBenchError(field: "--significance", "'\(requested)' is no per-user metric of these results\(Suggestion.hint(for: metric, in: ranking)); "
                                + "they hold \(ranking.sorted().joined(separator: ", "))")
        }
        var comparisons: [Comparison] = []
        for g in groups where g.entries.count >= 2 && !g.isLabeled {   // labelled runs keep no per-user values
            let values = try g.entries.map { try perUserValues($0, metric: metric) }
            let n = g.entries.count
            var outcomes = [[Significance.Outcome?]](repeating: [Significance.Outcome?](repeating: nil, count: n), count: n)
            var pairs: [(Int, Int)] = []
            for i in 0..<n {
                for j in 0..<n where i != j {
                    guard let a = values[i], let b = values[j], g.entries[i].result.splitFingerprint == g.entries[j].result.splitFingerprint else { continue }
                    let users = a.keys.filter { b[$0] != nil }.sorted()
                    let x = users.map { a[$0]! }, y = users.map { b[$0]! }
                    outcomes[i][j] = test == "wilcoxon" ? Significance.wilcoxon(x, y) : Significance.pairedTTest(x, y)
                    if i < j { pairs.append((i, j)) }
                }
            }
            let corrected = Significance.adjust(pairs.map { outcomes[$0.0][$0.1]!.p }, by: correction)
            var adjusted = [[Double?]](repeating: [Double?](repeating: nil, count: n), count: n)
            for (index, (i, j)) in pairs.enumerated() { adjusted[i][j] = corrected[index]; adjusted[j][i] = corrected[index] }
            comparisons.append(Comparison(dataset: g.dataset, historyMask: g.historyMask, labels: g.entries.map(\.label),
                                          outcomes: outcomes, adjusted: adjusted))
        }
        return comparisons
    }

    /// Markdown matrices: cell (row A, column B) = corrected p and effect size of A − B.
    public static func markdown(_ comparisons: [Comparison], metric: String, test: String, correction: Significance.Correction) -> String {
        var out: [String] = []
        for c in comparisons {
            out.append("### \(c.dataset) · history mask \(c.historyMask.rawValue) · "
                       + "\(test == "wilcoxon" ? "Wilcoxon signed-rank" : "paired t-test") on per-user \(metric) · "
                       + "\(correction.rawValue)-corrected p (effect size of row − column)\n")
            out += matrix(c.labels) { i, j in
                guard let o = c.outcomes[i][j], let p = c.adjusted[i][j] else { return "n/a" }
                let pText = p < 0.001 ? "<0.001" : String(format: "%.3f", p)
                return "\(p < 0.05 ? "**\(pText)**" : pText) (\(String(format: "%+.2f", o.effect)))"
            }
            out.append("")
        }
        return out.joined(separator: "\n")
    }

    /// A Markdown matrix of the runs `labels` against each other: `cell(i, j)` off the diagonal, "–" on it.
    static func matrix(_ labels: [String], cell: (Int, Int) -> String) -> [String] {
        var lines = ["| | " + labels.joined(separator: " | ") + " |", "|---|" + labels.map { _ in "---" }.joined(separator: "|") + "|"]
        for (i, label) in labels.enumerated() {
            lines.append("| \(label) | " + labels.indices.map { j in i == j ? "–" : cell(i, j) }.joined(separator: " | ") + " |")
        }
        return lines
    }
}
