import RecBenchSupport
/// Parses the time values shop exports contain into Unix seconds (UTC): plain numbers
/// (already seconds) and ISO-8601-like dates `YYYY-MM-DD`, `YYYY/MM/DD`, optionally with
/// ` HH:MM[:SS[.fff]]` or `THH:MM[:SS[.fff]]` and an optional `Z` or `±HH:MM` offset.
public enum Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z, or nil when `text` is not a supported time.
    public static func seconds(_ text: String) -> Double? {
        let t = text.trimmingSpaces
        if t.isEmpty { return nil }
        if CSVConverter.isDecimalNumber(t), let d = Double(t), d.isFinite { return d }
        let b = Array(t.utf8)
        var i = 0
        func number(_ digits: Int) -> Int? {
            guard i + digits <= b.count else { return nil }
            var v = 0
            for k in 0..<digits {
                let c = b[i + k]
                guard c >= 0x30 && c <= 0x39 else { return nil }
                v = v * 10 + Int(c - 0x30)
            }
            i += digits
            return v
        }
        func expect(_ chars: [UInt8]) -> Bool {
            guard i < b.count, chars.contains(b[i]) else { return false }
            i += 1
            return true
        }
        guard let year = number(4), expect([0x2D, 0x2F]), let month = number(2), expect([0x2D, 0x2F]), let day = number(2),
              (1...12).contains(month), (1...daysIn(month, year)).contains(day) else { return nil }
        var seconds = Double(daysFromCivil(year, month, day)) * 86_400
        if i == b.count { return seconds }
        guard expect([0x20, 0x54]), let hour = number(2), expect([0x3A]), let minute = number(2),
              hour < 24, minute < 60 else { return nil }
        seconds += Double(hour * 3600 + minute * 60)
        if i < b.count && b[i] == 0x3A {
            i += 1
            guard let second = number(2), second < 61 else { return nil }
            seconds += Double(second)
            if i < b.count && b[i] == 0x2E {
                i += 1
                var scale = 0.1
                var any = false
                while i < b.count, b[i] >= 0x30 && b[i] <= 0x39 { seconds += Double(b[i] - 0x30) * scale; scale /= 10; i += 1; any = true }
                guard any else { return nil }
            }
        }
        if i == b.count { return seconds }
        if b[i] == 0x5A { return i + 1 == b.count ? seconds : nil }
        guard b[i] == 0x2B || b[i] == 0x2D else { return nil }
        let sign = b[i] == 0x2B ? -1.0 : 1.0   // local time = UTC + offset
        i += 1
        guard let oh = number(2), expect([0x3A]), let om = number(2), i == b.count else { return nil }
        return seconds + sign * Double(oh * 3600 + om * 60)
    }

    static func daysIn(_ month: Int, _ year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Seconds as written into atomic files: an integer when whole, else the shortest decimal.
    public static func text(_ seconds: Double) -> String {
        if seconds.rounded() == seconds && abs(seconds) < 1e15 { return String(Int64(seconds)) }
        return String(seconds)
    }
}

import Foundation
