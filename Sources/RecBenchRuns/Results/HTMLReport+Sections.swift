import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation

/// The HTML report's tables: runs, data and settings, and what the history mask changes.
extension Report {
    func tableHTML(_ g: Group) -> String {
        let columns = columns(g)
        let header = "<th>Model</th>" + columns.map { "<th title=\"\(escape($0))\">\(escape(Report.readable($0)))</th>" }.joined()
            + "<th>Family</th><th>Type</th><th>Fit (s)</th><th>Evaluation (s)</th>"
        var rows = ["<div class=\"table-wrap\"><table><thead><tr>\(header)</tr></thead><tbody>"]
        for e in g.entries {
            let cells = columns.map { c -> String in
                let v = Report.value(e.result, c)
                return "<td\(v != nil && v == best(c, in: g) ? " class=\"best\"" : "")>\(cell(e, c))</td>"
            }.joined()
            let (fit, eval) = Report.fitAndEvalSeconds(e.result)
            rows.append("<tr><td>\(escape(e.label))</td>\(cells)<td>\(e.family.rawValue)</td><td>\(e.result.modelType.rawValue)</td>"
                        + "<td>\(Report.seconds(fit))</td><td>\(Report.seconds(eval))</td></tr>")
        }
        rows.append("</tbody></table></div>")
        return rows.joined(separator: "\n")
    }

    /// A collapsed section with the data the group ran on and each run's hyperparameters.
    func detailsHTML(_ g: Group) -> String {
        let rowsName = g.evaluationProtocol == .nextItem ? "examples" : "interactions"
        let summaries = Set(g.entries.map { e -> String in
            let s = e.result.statistics, split = e.result.split
            let repeats = split.test == 0 ? 0 : 100 * Double(split.testRepeatPositives) / Double(split.test)
            return "\(s.users) users · \(s.items) items · \(s.interactions) interactions (sparsity \(String(format: "%.4f", s.sparsity)))"
                + " · split \(split.train) / \(split.valid) / \(split.test) \(rowsName) · \(split.testUsers) test users"
                + " · \(String(format: "%.1f", repeats)) % of test positives are repeats"
        }).sorted()
        var out = ["<details><summary>Data and settings</summary>"]
        out += summaries.map { "<p class=\"meta\">\(escape(g.dataset)): \(escape($0))</p>" }
        out.append("<div class=\"table-wrap\"><table><thead><tr><th>Run</th><th>Hyperparameters</th><th>Run key</th></tr></thead><tbody>")
        for e in g.entries {
            let values = e.result.hyperparameters.isEmpty ? "none" : TuningRecord.describe(e.result.hyperparameters)
            out.append("<tr><td>\(escape(e.label))</td><td class=\"wrap\">\(escape(values))</td><td>\(escape(e.runKeys.joined(separator: ", ")))</td></tr>")
        }
        out.append("</tbody></table></div></details>")
        return out.joined(separator: "\n")
    }

    /// Where one sweep ran several history masks on the same data: each run's headline
    /// metric under each mask side by side, and how much of RecBole's figure no honest mask
    /// reaches (on data with repeats, that part is the leak).
    func maskComparisons() -> [String] {
        var sections: [String] = []
        let keys = groups.map { "\($0.dataset)\u{1}\($0.evaluationProtocol.rawValue)\u{1}\($0.isLabeled)" }
        for key in Set(keys).sorted() {
            let family = groups.enumerated().filter { keys[$0.offset] == key }.map(\.element)
            guard family.count > 1, let first = family.first else { continue }
            let masks = [HistoryMask.none, .seen, .recbole].filter { m in family.contains { $0.historyMask == m } }
            let metric = headlineKey(first)
            var labels: [String] = []
            for g in family { for e in g.entries where !labels.contains(e.setting) { labels.append(e.setting) } }
            let values = labels.map { label in
                masks.map { m in family.first { $0.historyMask == m }?.entries.first { $0.setting == label }.flatMap { Report.value($0.result, metric) } }
            }
            let series = masks.map { HTMLChart.Series(name: $0.rawValue, colour: Report.maskColours[$0] ?? "#999") }
            let heading = "\(first.dataset)\(first.protocolSuffix) · what the history mask changes · \(Report.readable(metric))"
            sections.append("<section><h2>\(escape(heading))</h2>"
                + "<p class=\"meta\">\(inlineMarkdown(Report.maskCaption))</p>"
                + "<div class=\"charts\">" + HTMLChart.grouped(title: "\(Report.readable(metric)) under each history mask", rows: Array(zip(labels, values)),
                                                           series: series, maximum: nil, format: { String(format: "%.4f", $0) }, width: 320) + "</div>"
                + leakTable(labels: labels, masks: masks, values: values) + "</section>")
        }
        return sections
    }

    static let maskCaption = "`none` ranks every item; `seen` removes each user's earlier items; `recbole` (RecBole's rule) removes them "
        + "except the test positives, which reads the labels. Where users buy again, recbole's edge over the better honest mask is the leak."

    /// Per run, the value under each mask and recbole's edge over the better honest one.
    func leakTable(labels: [String], masks: [HistoryMask], values: [[Double?]]) -> String {
        let recbole = masks.firstIndex(of: .recbole)
        let honest = masks.indices.filter { masks[$0] != .recbole }
        var out = "<div class=\"table-wrap\"><table><thead><tr><th>Model</th>" + masks.map { "<th>\($0.rawValue)</th>" }.joined()
        let showLeak = recbole != nil && !honest.isEmpty
        if showLeak { out += "<th>recbole over the better honest mask</th>" }
        out += "</tr></thead><tbody>"
        for (label, row) in zip(labels, values) {
            out += "<tr><td>\(escape(label))</td>" + row.map { "<td>\($0.map { String(format: "%.4f", $0) } ?? "–")</td>" }.joined()
            if showLeak, let r = row[recbole!] {
                let best = honest.compactMap { row[$0] }.max()
                let text = best.map { b in String(format: "%+.4f", r - b) + (r > 0 ? String(format: " (%.0f %% of its figure)", 100 * (r - b) / r) : "") }
                out += "<td>\(text ?? "–")</td>"
            } else if showLeak {
                out += "<td>–</td>"
            }
            out += "</tr>"
        }
        return out + "</tbody></table></div>"
    }
}
