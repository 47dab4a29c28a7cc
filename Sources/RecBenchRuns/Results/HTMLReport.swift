import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// The report as one self-contained HTML page: tables and inline SVG bar charts, no network.
extension Report {
    /// The four business charts, with their bar colours.
    static let charts: [(key: String, title: String, colour: String)] = [
        ("users_with_hit", "Users with at least one hit", "#4e79a7"),
        ("repeat_hit_share", "Share of hits that are repeat items", "#f28e2b"),
        ("users_with_new_hit", "Users with a hit on a new item", "#59a14f"),
        ("item_coverage", "Item coverage (share of the catalogue recommended)", "#e15759"),
    ]
    /// The headline metric's bar colour.
    static let headlineColour = "#2f4b7c"
    /// Repeat recall, new-item recall and the share of the top K the user had before.
    static let decomposition: [(key: String, series: HTMLChart.Series)] = [
        ("repeat_recall", .init(name: "repeat recall", colour: "#f28e2b")),
        ("new_recall", .init(name: "new-item recall", colour: "#59a14f")),
        ("history_share", .init(name: "share of top K seen before", colour: "#9c755f")),
    ]
    /// One colour per history mask mode in the mask comparison.
    static let maskColours: [HistoryMask: String] = [.none: "#bab0ac", .seen: "#499894", .recbole: "#d37295"]

    /// Readable names of report columns; the raw key stays in the header's tooltip.
    static let columnTitles: [String: String] = [
        "recall": "Recall", "mrr": "MRR", "ndcg": "NDCG", "hit": "Hit rate", "precision": "Precision", "map": "MAP",
        "users_with_hit": "Users with a hit", "repeat_hit_share": "Repeat share of hits", "users_with_new_hit": "Users with a new-item hit",
        "item_coverage": "Item coverage", "repeat_recall": "Repeat recall", "new_recall": "New-item recall",
        "history_share": "Share of top K seen before",
    ]

    /// "users_with_hit@10" as "Users with a hit @10"; a key without a title keeps its words.
    static func readable(_ column: String) -> String {
        guard let key = MetricKey(parsing: column) else { return column.replacingOccurrences(of: "_", with: " ") }
        return "\(columnTitles[key.name] ?? key.name.replacingOccurrences(of: "_", with: " "))@\(key.k)"
    }

    /// The page.
    public func html(title: String = "recbench report") -> String {
        var body: [String] = ["<h1>\(escape(title))</h1>",
                              "<p class=\"meta\">recbench \(recbenchVersion) · test split · cutoff @\(k) · sorted by \(escape(sortKey))</p>"]
        body += maskComparisons()
        body += groups.map(groupHTML)
        do { body.append(try tunedHTML()) } catch { body.append("<p class=\"warning\">Default against tuned not shown: \(escape("\(error)"))</p>") }
        if !failures.isEmpty {
            body.append("<section><h2>Failed runs</h2><ul>"
                        + failures.map { f in
                            "<li><b>\(escape(f.dataset)) · \(escape(f.label))</b>: \(escape(f.error))"
                                + (f.rerunSince ? " <i>(\(escape(Report.rerunNote(f))))</i>" : "") + "</li>"
                        }.joined()
                        + "</ul></section>")
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            \(Report.style)
            </style></head>
            <body>
            \(body.joined(separator: "\n"))
            </body></html>

            """
    }

    static let style = """
        body { font: 14px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #222; background: #fff; }
        h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
        .meta { color: #666; margin: 0 0 12px; max-width: 1100px; }
        .warning { background: #fff4e5; border-left: 4px solid #f28e2b; padding: 6px 10px; max-width: 1100px; }
        .warning code { background: #fbe3c4; padding: 0 3px; border-radius: 3px; }
        .table-wrap { max-width: 100%; overflow-x: auto; }
        table { border-collapse: collapse; margin: 8px 0 16px; font-variant-numeric: tabular-nums; }
        th, td { padding: 3px 7px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
        th { white-space: normal; vertical-align: bottom; max-width: 7.5em; font-size: 12px; }
        th:first-child, td:first-child { text-align: left; white-space: normal; max-width: 16em; }
        th { background: #f5f5f5; font-weight: 600; }
        td.best { font-weight: 700; }
        td.wrap { white-space: normal; text-align: left; max-width: 60em; font-size: 12px; }
        details { margin: 10px 0 0; } summary { cursor: pointer; font-weight: 600; }
        .charts { display: flex; flex-wrap: wrap; gap: 18px; }
        .chart { border: 1px solid #e3e3e3; border-radius: 4px; padding: 8px; }
        .chart h3 { font-size: 13px; margin: 0 0 6px; font-weight: 600; }
        svg text { font-size: 11px; fill: #333; }
        """

    /// One group: heading, caveat, table, charts (headline metric, the shop's questions, the
    /// repeat/explore decomposition, seconds) and the data and settings behind them.
    func groupHTML(_ g: Group) -> String {
        let (heading, warning) = caption(g)
        var body = ["<section><h2>\(escape(heading))</h2>"]
        if let warning { body.append("<p class=\"warning\">\(inlineMarkdown(warning))</p>") }
        body.append(tableHTML(g))
        let headline = headlineKey(g)
        var charts = [HTMLChart.bars(title: "\(Report.readable(headline)) (the headline metric)",
                                     bars: g.entries.map { ($0.label, Report.value($0.result, headline) ?? 0) },
                                     colour: Report.headlineColour, maximum: nil, spreads: g.entries.map { $0.spread[headline] },
                                     format: { String(format: "%.4f", $0) })]
        let (analyses, empty) = g.isLabeled ? ([], []) : analysisCharts(g)   // no ranked lists: nothing to analyse
        charts += analyses
        if let decomposition = decompositionChart(g) { charts.append(decomposition) }
        charts.append(HTMLChart.timing(g.entries.map { e in
            let (fit, eval) = Report.fitAndEvalSeconds(e.result)
            return (e.label, fit, eval)
        }, seconds: Report.seconds))
        body += empty.map { "<p class=\"meta\">\(escape($0.prefix(1).uppercased() + $0.dropFirst())).</p>" }
        body.append("<div class=\"charts\">" + charts.joined(separator: "\n") + "</div>")
        body.append(detailsHTML(g))
        return body.joined(separator: "\n") + "</section>"
    }

    /// The metric the runs select by (`valid_metric`'s name) at the report's cutoff, when the
    /// results hold it; else the sort key.
    func headlineKey(_ g: Group) -> String {
        if g.isLabeled, let key = g.labeledSortKey { return key }
        let named = g.entries.lazy.compactMap { $0.result.config["valid_metric"]?.stringValue?.lowercased() }.first
        // A metric at a cutoff is shown at the report's; one without (GAUC) as it is.
        let key = named.map { name in MetricKey(parsing: name).map { MetricKey($0.name, k: k).description } ?? name }
        return key.flatMap { key in g.entries.contains { Report.value($0.result, key) != nil } ? key : nil } ?? sortKey
    }

    /// The analysis charts that have something to show, and a note for each left out.
    func analysisCharts(_ g: Group) -> (charts: [String], notes: [String]) {
        var charts: [String] = [], empty: [String] = []
        for chart in Report.charts {
            let key = MetricKey(chart.key, k: k).description
            let bars = g.entries.map { e in (e.label, Report.value(e.result, key) ?? 0) }
            guard bars.contains(where: { $0.1 != 0 }) else {
                let why = g.historyMask == .seen ? "history mask seen removes each user's earlier items from the ranking"
                    : "every hit is a new item in this data"
                empty.append(chart.key == "repeat_hit_share" ? "no repeat hits (\(why)), so the repeat-share chart is left out"
                             : "\(chart.title.lowercased()) is 0 for every run; chart left out")
                continue
            }
            let isCount = chart.key.hasPrefix("users_with")
            charts.append(HTMLChart.bars(title: "\(chart.title) @\(k)", bars: bars, colour: chart.colour, maximum: isCount ? nil : 1,
                                         spreads: g.entries.map { $0.spread[key] },
                                         format: { isCount ? String(Int($0.rounded())) : String(format: "%.3f", $0) }))
        }
        return (charts, empty)
    }

    /// Repeat recall, new-item recall and the share of the top K the user had before, per
    /// run, as next-basket evaluations report them; nil where the test split has no repeat
    /// (every hit is new) or the runs did not record them.
    func decompositionChart(_ g: Group) -> String? {
        guard g.hasRepeats else { return nil }
        let keys = Report.decomposition.map { MetricKey($0.key, k: k).description }
        let rows = g.entries.map { e in (e.label, keys.map { Report.value(e.result, $0) }) }
        guard rows.contains(where: { $0.1.contains { $0 != nil } }) else { return nil }
        return HTMLChart.grouped(title: "Repeat or explore: recall on repeat and new items, and how much of the top \(k) is the past",
                                 rows: rows, series: Report.decomposition.map(\.series), maximum: 1, format: { String(format: "%.3f", $0) })
    }

    /// A column name that may wrap after `_` and before `@` (narrow headers, no clipped table).
    func breakable(_ column: String) -> String {
        escape(column).replacingOccurrences(of: "_", with: "_<wbr>").replacingOccurrences(of: "@", with: "<wbr>@")
    }

    /// Escaped text with Markdown's inline code (`x`) and bold (**x**) rendered.
    func inlineMarkdown(_ text: String) -> String {
        var out = "", code = false, bold = false
        var rest = Substring(text)
        while let c = rest.first {
            if rest.hasPrefix("**") && !code {
                out += bold ? "</b>" : "<b>"; bold.toggle(); rest = rest.dropFirst(2); continue
            }
            if c == "`" { out += code ? "</code>" : "<code>"; code.toggle() } else { out += escape(String(c)) }
            rest = rest.dropFirst()
        }
        return out + (code ? "</code>" : "") + (bold ? "</b>" : "")
    }

    func escape(_ s: String) -> String { HTMLChart.escape(s) }
}
