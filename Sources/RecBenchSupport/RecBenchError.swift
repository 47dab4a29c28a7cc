/// An error caused by the user's input (data, config, command line), described in one line
/// that names the file, line and field or the config key. Programmer errors are preconditions.
public struct RecBenchError: Error, CustomStringConvertible, Equatable, Sendable {
    /// Where the problem is: "path", "path:line", or a config key's origin; may be empty.
    public let location: String
    /// The field or key at fault, when there is one.
    public let field: String?
    /// What is wrong, and when possible how to fix it.
    public let message: String

    /// An error at `location` (and optionally a field or key) with `message`.
    public init(location: String = "", field: String? = nil, _ message: String) {
        self.location = location
        self.field = field
        self.message = message
    }

    /// An error in a data file, at an optional 1-based line and field.
    public static func file(_ path: String, line: Int? = nil, field: String? = nil, _ message: String) -> RecBenchError {
        RecBenchError(location: line.map { "\(path):\($0)" } ?? path, field: field, message)
    }

    /// An error in a config key, set at `origin`.
    public static func config(_ key: String, origin: String? = nil, _ message: String) -> RecBenchError {
        RecBenchError(location: origin ?? "", field: key, message)
    }

    public var description: String {
        var parts: [String] = []
        if !location.isEmpty { parts.append(location) }
        if let field { parts.append("'\(RecBenchError.clipped(field, to: 80))'") }
        parts.append(message)
        // Always one short line: user data may contain line breaks, or be megabytes long.
        return RecBenchError.clipped(parts.joined(separator: ": ").split(whereSeparator: \.isNewline).joined(separator: " "), to: 1_000)
    }

    /// `text` cut to `limit` characters, saying how much was left out.
    static func clipped(_ text: String, to limit: Int) -> String {
        guard text.count > limit else { return text }
        return text.prefix(limit) + "… (\(text.count - limit) more characters)"
    }
}

/// Edit-distance suggestions ("did you mean …?") for misspelt keys, models and metrics.
public enum Suggestion {
    /// The candidate closest to `word` (case-insensitive Levenshtein), if it is close enough
    /// to be a plausible typo.
    public static func nearest(to word: String, in candidates: some Sequence<String>) -> String? {
        let w = Array(word.lowercased())
        var best: (String, Int)?
        for candidate in candidates {
            let d = distance(w, Array(candidate.lowercased()))
            if best == nil || d < best!.1 { best = (candidate, d) }
        }
        guard let (name, d) = best else { return nil }
        // A short word is a typo of another only one edit away; a word all of whose letters change is no typo.
        return d <= (w.count <= 4 ? 1 : max(2, w.count / 3)) && d < w.count ? name : nil
    }

    /// " (did you mean 'x'?)" or "".
    public static func hint(for word: String, in candidates: some Sequence<String>) -> String {
        nearest(to: word, in: candidates).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Edits between a and b, a swap of neighbours counting as one (Damerau–Levenshtein, the
    /// optimal-string-alignment form): "BRP" is one edit from "BPR", two from "Pop".
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], beforePrevious[j - 2] + 1) }
            }
            (beforePrevious, previous, current) = (previous, current, beforePrevious)
        }
        return previous[b.count]
    }
}
