import Foundation

/// Inline SVG bar charts for the HTML report: self-contained, no script, no network.
enum HTMLChart {
    /// One series of a grouped chart: its name (the legend) and its colour.
    struct Series {
        let name: String
        let colour: String
    }

    static let labelWidth = 170.0

    /// A horizontal bar chart, one bar per row; `maximum` fixes the scale (nil: the largest bar);
    /// `spreads` (a row's standard deviation over seeds) draws a whisker of ± that around its bar's end
    /// (single-series charts only).
    static func bars(title: String, bars: [(String, Double)], colour: String, maximum: Double?, spreads: [Double?] = [],
                     format: (Double) -> String) -> String {
        grouped(title: title, rows: bars.map { ($0.0, [$0.1]) }, series: [Series(name: "", colour: colour)], maximum: maximum,
                format: format, spreads: spreads)
    }

    /// A horizontal bar chart with one bar per series in each row (a legend when there are
    /// several series); a missing value (nil) leaves its slot empty.
    static func grouped(title: String, rows: [(String, [Double?])], series: [Series], maximum: Double?,
                        format: (Double) -> String, width barArea: Double = 260, spreads: [Double?] = []) -> String {
        let barHeight = series.count == 1 ? 16.0 : 11.0, gap = series.count == 1 ? 6.0 : 8.0
        let rowHeight = Double(series.count) * barHeight + gap
        let legend = series.count > 1 ? 18.0 : 0
        let ends = rows.enumerated().flatMap { i, row in row.1.compactMap { $0.map { $0 + (i < spreads.count ? spreads[i] ?? 0 : 0) } } }
        let top = maximum ?? max(1e-12, ends.max() ?? 1)
        let height = legend + Double(rows.count) * rowHeight + 8
        var svg = "<div class=\"chart\"><h3>\(escape(title))</h3>"
            + "<svg width=\"\(Int(labelWidth + barArea + 60))\" height=\"\(Int(height))\" role=\"img\" aria-label=\"\(escape(title))\">"
        if series.count > 1 { svg += legendSVG(series) }
        for (i, (label, values)) in rows.enumerated() {
            let y = legend + Double(i) * rowHeight + 4
            svg += "<text x=\"\(Int(labelWidth - 6))\" y=\"\(Int(y + rowHeight / 2 + 1))\" text-anchor=\"end\">\(escape(shorten(label)))</text>"
            for (j, value) in values.enumerated() {
                guard let value else { continue }
                let w = max(0, min(1, value / top)) * barArea, yy = y + Double(j) * barHeight
                svg += "<rect x=\"\(Int(labelWidth))\" y=\"\(Int(yy))\" width=\"\(String(format: "%.1f", w))\""
                    + " height=\"\(Int(barHeight - 1))\" fill=\"\(series[j].colour)\"/>"
                var textX = labelWidth + w + 4
                if series.count == 1, i < spreads.count, let sd = spreads[i], sd > 0 {
                    let (low, high) = (max(0, min(1, (value - sd) / top)) * barArea, max(0, min(1, (value + sd) / top)) * barArea)
                    let (mid, x1, x2) = (Int(yy + barHeight / 2), String(format: "%.1f", labelWidth + low), String(format: "%.1f", labelWidth + high))
                    // Orange with end caps: visible over every bar colour the report uses.
                    svg += "<path class=\"spread\" d=\"M\(x1) \(mid) H\(x2) M\(x1) \(mid - 4) V\(mid + 4) M\(x2) \(mid - 4) V\(mid + 4)\""
                        + " stroke=\"#f39c12\" stroke-width=\"2\" fill=\"none\"/>"
                    textX = labelWidth + high + 4
                }
                svg += "<text x=\"\(Int(textX))\" y=\"\(Int(yy + barHeight - 3))\">\(format(value))</text>"
            }
        }
        return svg + "</svg></div>"
    }

    /// Coloured squares with the series' names, on one line above the bars.
    static func legendSVG(_ series: [Series]) -> String {
        var x = 8.0, svg = ""
        for s in series {
            svg += "<rect x=\"\(Int(x))\" y=\"3\" width=\"10\" height=\"10\" fill=\"\(s.colour)\"/>"
            svg += "<text x=\"\(Int(x + 14))\" y=\"12\">\(escape(s.name))</text>"
            x += 26 + Double(s.name.count) * 6.5
        }
        return svg
    }

    /// Fit and evaluation seconds per run, two bars each, on a log scale: a 0.01 s model
    /// and a 150 s one are both visible. Ticks at each power of ten.
    static func timing(_ times: [(label: String, fit: Double, eval: Double)], seconds: (Double) -> String) -> String {
        let barArea = 300.0, rowHeight = 30.0, axis = 18.0
        let positive = times.flatMap { [$0.fit, $0.eval] }.filter { $0 > 0 }
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
        for (i, t) in times.enumerated() {
            let y = Double(i) * rowHeight + 4
            svg += "<text x=\"\(Int(labelWidth - 6))\" y=\"\(Int(y + 16))\" text-anchor=\"end\">\(escape(shorten(t.label)))</text>"
            for (j, (value, colour)) in [(t.fit, "#76b7b2"), (t.eval, "#b07aa1")].enumerated() {
                let w = scale(value), yy = y + 2 + Double(j) * 12
                svg += "<rect x=\"\(Int(labelWidth))\" y=\"\(Int(yy))\" width=\"\(String(format: "%.1f", w))\" height=\"10\" fill=\"\(colour)\"/>"
                svg += "<text x=\"\(Int(labelWidth + w + 4))\" y=\"\(Int(yy + 9))\">\(seconds(value))</text>"
            }
        }
        return svg + "</svg></div>"
    }

    static func shorten(_ s: String) -> String { s.count > 28 ? String(s.prefix(27)) + "…" : s }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
