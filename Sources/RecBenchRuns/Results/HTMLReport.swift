import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
import RecBenchEvaluation
import RecBenchModels

/// The report as one self-contained HTML page: tables and inline SVG bar charts, no network.
extension Report {
    /// The four business charts and the timing chart, with their bar colours.
    static let charts: [(key: String, title: String, colour: String)] = [
        ("users_with_hit", "Users with at least one hit", "#4e79a7"),
        ("repeat_hit_share", "Share of hits that are repeat items", "#f28e2b"),
        ("users_with_new_hit", "Users with a hit on a new item", "#59a14f"),
        ("item_coverage", "Item coverage (share of the catalogue recommended)", "#e15759"),
    ]

    /// The page.
    public func html(title: String = "recbench report") -> String {
        var body: [String] = ["<h1>\(escape(title))</h1>",
                              "<p class=\"meta\">recbench \(recbenchVersion) · test split · cutoff @\(k) · sorted by \(escape(sortKey))</p>"]
        for g in groups {
            let (heading, warning) = caption(g)
            body.append("<section><h2>\(escape(heading))</h2>")
            if let warning { body.append("<p class=\"warning\">\(inlineMarkdown(warning))</p>") }
            body.append(tableHTML(g))
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
                charts.append(barChart(title: "\(chart.title) @\(k)", bars: bars, colour: chart.colour,
                                       maximum: isCount ? nil : 1, format: { isCount ? String(Int($0)) : String(format: "%.3f", $0) }))
            }
            body += empty.map { "<p class=\"meta\">\(escape($0.prefix(1).uppercased() + $0.dropFirst())).</p>" }
            body.append("<div class=\"charts\">" + (charts + [timingChart(g)]).joined(separator: "\n") + "</div></section>")
        }
        do { body.append(try tunedHTML()) } catch { body.append("<p class=\"warning\">Default against tuned not shown: \(escape("\(error)"))</p>") }
        if !failures.isEmpty {
            body.append("<section><h2>Failed runs</h2><ul>"
                        + failures.map { "<li><b>\(escape($0.dataset)) · \(escape($0.label))</b>: \(escape($0.error))</li>" }.joined()
                        + "</ul></section>")
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body { font: 14px/1.4 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px; color: #222; background: #fff; }
            h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
            .meta { color: #666; margin: 0 0 12px; }
            .warning { background: #fff4e5; border-left: 4px solid #f28e2b; padding: 6px 10px; max-width: 1100px; }
            .warning code { background: #fbe3c4; padding: 0 3px; border-radius: 3px; }
            .table-wrap { max-width: 100%; overflow-x: auto; }
            table { border-collapse: collapse; margin: 8px 0 16px; font-variant-numeric: tabular-nums; }
            th, td { padding: 3px 7px; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
            th { white-space: normal; vertical-align: bottom; max-width: 7.5em; font-size: 12px; }
            th:first-child, td:first-child { text-align: left; white-space: normal; max-width: 16em; }
            th { background: #f5f5f5; font-weight: 600; }
            td.best { font-weight: 700; }
            .charts { display: flex; flex-wrap: wrap; gap: 18px; }
            .chart { border: 1px solid #e3e3e3; border-radius: 4px; padding: 8px; }
            .chart h3 { font-size: 13px; margin: 0 0 6px; font-weight: 600; }
            svg text { font-size: 11px; fill: #333; }
            </style></head>
            <body>
            \(body.joined(separator: "\n"))
            </body></html>

            """
    }

    func tableHTML(_ g: Group) -> String {
        let columns = metricColumns + analysisColumns
        var rows = ["<div class=\"table-wrap\"><table><thead><tr><th>model</th>" + columns.map { "<th>\(breakable($0))</th>" }.joined()
                    + "<th>family</th><th>type</th><th>fit s</th><th>eval s</th></tr></thead><tbody>"]
        for e in g.entries {
            let cells = columns.map { c -> String in
                let v = Report.value(e.result, c)
                return "<td\(v != nil && v == best(c, in: g) ? " class=\"best\"" : "")>\(format(v, c))</td>"
            }.joined()
            let (fit, eval) = Report.fitAndEvalSeconds(e.result)
            rows.append("<tr><td>\(escape(e.label))</td>\(cells)<td>\(e.family.rawValue)</td><td>\(e.result.modelType.rawValue)</td>"
                        + "<td>\(Report.seconds(fit))</td><td>\(Report.seconds(eval))</td></tr>")
        }
        rows.append("</tbody></table></div>")
        return rows.joined(separator: "\n")
    }

    /// A horizontal bar chart as inline SVG.
    func barChart(title: String, bars: [(String, Double)], colour: String, maximum: Double?, format: (Double) -> String) -> String {
        let labelWidth = 170.0, barArea = 260.0, rowHeight = 22.0
        let top = maximum ?? max(1e-12, bars.map(\.1).max() ?? 1)
        let height = Double(bars.count) * rowHeight + 8
        var svg = "<div class=\"chart\"><h3>\(escape(title))</h3>"
            + "<svg width=\"\(Int(labelWidth + barArea + 60))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"\(escape(title))\">"
        for (i, (label, value)) in bars.enumerated() {
            let y = Double(i) * rowHeight + 4
            let width = max(0, min(1, value / top)) * barArea
            svg += "<text x=\"\(Int(labelWidth - 6))\" y=\"\(Int(y + 14))\" text-anchor=\"end\">\(escape(shorten(label)))</text>"
            svg += "<rect x=\"\(Int(labelWidth))\" y=\"\(Int(y + 2))\" width=\"\(String(format: "%.1f", width))\""
                + " height=\"\(Int(rowHeight - 6))\" fill=\"\(colour)\"/>"
            svg += "<text x=\"\(Int(labelWidth + width + 4))\" y=\"\(Int(y + 14))\">\(format(value))</text>"
        }
        return svg + "</svg></div>"
    }

    /// Fit and evaluation seconds per run, two bars each, on a log scale: a 0.01 s model
    /// and a 150 s one are both visible. Ticks at each power of ten.
    func timingChart(_ g: Group) -> String {
        let labelWidth = 170.0, barArea = 300.0, rowHeight = 30.0, axis = 18.0
        let times = g.entries.map { e in
            (e.label, e.result.seconds["fit"] ?? 0, (e.result.seconds["evaluate_valid"] ?? 0) + (e.result.seconds["evaluate_test"] ?? 0))
        }
        let positive = times.flatMap { [$0.1, $0.2] }.filter { $0 > 0 }
        let low = pow(10, (log10(positive.min() ?? 0.001)).rounded(.down))
        let high = pow(10, log10(positive.max() ?? 1).rounded(.down) + 1)   // the next power of ten above the largest
        let scale = { (v: Double) in v <= low ? 0 : log10(v / low) / log10(high / low) * barArea }
        let height = Double(times.count) * rowHeight + 8 + axis
        var svg = "<div class=\"chart\"><h3>Seconds (log scale): fit (teal) and evaluation (purple)</h3>"
            + "<svg width=\"\(Int(labelWidth + barArea + 70))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"seconds, log scale\">"
        var tick = low
        while tick <= high * 1.0001 {
            let x = labelWidth + scale(tick)
            svg += "<line x1=\"\(Int(x))\" y1=\"4\" x2=\"\(Int(x))\" y2=\"\(Int(height - axis))\" stroke=\"#e3e3e3\"/>"
            svg += "<text x=\"\(Int(x))\" y=\"\(Int(height - 4))\" text-anchor=\"middle\">\(tick >= 1 ? String(Int(tick)) : String(format: "%g", tick))</text>"
            tick *= 10
        }
        for (i, (label, fit, eval)) in times.enumerated() {
            let y = Double(i) * rowHeight + 4
            svg += "<text x=\"\(Int(labelWidth - 6))\" y=\"\(Int(y + 16))\" text-anchor=\"end\">\(escape(shorten(label)))</text>"
            for (j, (value, colour)) in [(fit, "#76b7b2"), (eval, "#b07aa1")].enumerated() {
                let w = scale(value), yy = y + 2 + Double(j) * 12
                svg += "<rect x=\"\(Int(labelWidth))\" y=\"\(Int(yy))\" width=\"\(String(format: "%.1f", w))\" height=\"10\" fill=\"\(colour)\"/>"
                svg += "<text x=\"\(Int(labelWidth + w + 4))\" y=\"\(Int(yy + 9))\">\(Report.seconds(value))</text>"
            }
        }
        return svg + "</svg></div>"
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

    func shorten(_ s: String) -> String { s.count > 28 ? String(s.prefix(27)) + "…" : s }

    func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
