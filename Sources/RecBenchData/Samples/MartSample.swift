import Linalg
import RecBenchSupport

/// A deterministic, Mart-like grocery purchase log: users visit weekly, re-buy their staples
/// most visits, and add a few items from a long tail biased to their favourite categories.
/// It exists to exercise the CSV → atomic-file → benchmark path on data with heavy repeat
/// purchases; it is synthetic and says nothing about any real shop.
public struct MartSample: Sendable {
    /// Shape of the generated log.
    public struct Shape: Sendable {
        public var users = 2_000
        public var items = 2_000
        public var weeks = 12
        public var seed: UInt64 = 2024
        public init() {}
    }

    /// `interact.csv`: `user_id,item_id,timestamp` (local time, one row per item bought).
    public let interactions: String
    /// `items.csv`: `item_id,item_name,item_category_id`.
    public let items: String
    /// `users.csv`: `user_id,feature1,feature2` (age band, home store).
    public let users: String

    static let categories: [(name: String, weight: Double, products: [String])] = [
        ("野菜", 1.6, ["キャベツ", "にんじん", "玉ねぎ", "じゃがいも", "トマト",
                     "きゅうり", "ほうれん草", "ブロッコリー", "大根", "ねぎ"]),
        ("果物", 1.0, ["バナナ", "りんご", "みかん", "いちご", "キウイ", "ぶどう"]),
        ("精肉", 1.2, ["鶏もも肉", "豚こま切れ", "牛切り落とし", "合いびき肉", "鶏むね肉", "ベーコン"]),
        ("鮮魚", 0.8, ["鮭切り身", "さば", "まぐろ刺身", "あじ", "えび", "しらす"]),
        ("乳製品", 1.4, ["牛乳", "ヨーグルト", "チーズ", "バター", "生クリーム"]),
        ("パン", 1.0, ["食パン", "ロールパン", "クロワッサン", "バゲット"]),
        ("米・麺類", 0.9, ["白米", "うどん", "そば", "パスタ", "ラーメン"]),
        ("調味料", 0.8, ["しょうゆ", "みそ", "マヨネーズ", "ケチャップ", "砂糖", "塩", "ドレッシング"]),
        ("飲料", 1.3, ["緑茶", "麦茶", "炭酸水", "オレンジジュース", "コーヒー", "豆乳"]),
        ("菓子", 1.1, ["ポテトチップス", "チョコレート", "クッキー", "せんべい", "グミ"]),
        ("冷凍食品", 0.9, ["冷凍餃子", "冷凍うどん", "冷凍ピザ", "アイスクリーム", "冷凍野菜"]),
        ("惣菜", 1.0, ["から揚げ", "コロッケ", "ポテトサラダ", "弁当", "おにぎり"]),
        ("酒類", 0.6, ["ビール", "日本酒", "ワイン", "チューハイ"]),
        ("日用品", 0.7, ["ティッシュ", "トイレットペーパー", "洗剤", "シャンプー", "ラップ"]),
    ]
    static let variants = ["", "国産", "特選", "徳用", "有機", "小分け", "大容量", "減塩", "やわらか", "北海道産"]
    static let sizes = ["", " 1個", " 2個入", " 3個入", " 100g", " 200g", " 500g", " 1kg", " 500ml", " 1L", " 6枚切", " 1パック"]
    static let ageBands = ["10代", "20代", "30代", "40代", "50代", "60代", "70代以上"]
    static let stores = ["本店", "駅前店", "郊外店", "北口店"]

    /// Generates the three CSV texts; the same shape gives the same bytes.
    public init(shape: Shape = Shape()) {
        var rng = SeededGenerator(seed: shape.seed)
        let categories = MartSample.categories
        func pick<T>(_ array: [T]) -> T { array[rng.nextInt(below: array.count)] }
        func weighted(_ weights: [Double]) -> Int {
            var x = Double(rng.nextUnitFloat()) * weights.reduce(0, +)
            for (i, w) in weights.enumerated() { x -= w; if x < 0 { return i } }
            return weights.count - 1
        }

        // Items: a category each, a Zipf popularity by id order, a name.
        var itemCategory = [Int](), itemNames = [String]()
        for k in 0..<shape.items {
            let c = weighted(categories.map(\.weight))
            itemCategory.append(c)
            let name = "\(pick(MartSample.variants))\(pick(categories[c].products))\(pick(MartSample.sizes))"
            itemNames.append(MartSample.itemName(name, number: k))
        }
        let popularity = (0..<shape.items).map { 1 / pow(Double($0 + 1), 0.9) }
        let itemsByCategory = (0..<categories.count).map { c in (0..<shape.items).filter { itemCategory[$0] == c } }

        // Users: favourite categories, staples among their popular items, visit habits.
        var rows: [(time: Int, user: Int, item: Int)] = []
        var userLines = ["user_id,feature1,feature2"]
        let start = 1_711_929_600   // 2024-04-01 00:00 (a Monday), written as local time
        for u in 0..<shape.users {
            userLines.append("\(u + 1),\(pick(MartSample.ageBands)),\(pick(MartSample.stores))")
            let favourites = (0..<(3 + rng.nextInt(below: 3))).map { _ in weighted(categories.map(\.weight)) }
            var staples: [Int] = []   // at most the favourites' items: a tiny catalogue leaves categories empty, and the draw would never end
            let stapleCount = min(4 + rng.nextInt(below: 9), Set(favourites).reduce(0) { $0 + itemsByCategory[$1].count })
            while staples.count < stapleCount {
                let pool = itemsByCategory[pick(favourites)]
                guard !pool.isEmpty else { continue }
                let item = pool[weighted(pool.map { popularity[$0] })]
                if !staples.contains(item) { staples.append(item) }
            }
            let visitProbability = 0.3 + 0.6 * Double(rng.nextUnitFloat())
            let stapleProbability = 0.3 + 0.5 * Double(rng.nextUnitFloat())
            let preferredDay = rng.nextInt(below: 7)
            for week in 0..<max(shape.weeks, 0) where Double(rng.nextUnitFloat()) < visitProbability {
                let day = rng.nextUnitFloat() < 0.6 ? preferredDay : rng.nextInt(below: 7)
                let time = start + week * 604_800 + day * 86_400 + (9 + rng.nextInt(below: 12)) * 3600 + rng.nextInt(below: 60) * 60
                var basket: [Int] = staples.filter { _ in Double(rng.nextUnitFloat()) < stapleProbability }
                let extras = 1 + rng.nextInt(below: 5)
                for _ in 0..<extras {
                    let item: Int
                    if rng.nextUnitFloat() < 0.7, case let pool = itemsByCategory[pick(favourites)], !pool.isEmpty {
                        item = pool[weighted(pool.map { popularity[$0] })]
                    } else {
                        item = weighted(popularity)
                    }
                    if !basket.contains(item) { basket.append(item) }
                }
                for item in basket { rows.append((time, u, item)) }
            }
        }
        interactions = MartSample.interactionsCSV(rows)
        items = MartSample.itemsCSV(names: itemNames, categories: itemCategory)
        users = userLines.joined(separator: "\n") + "\n"
    }

    /// Gives some drawn names a comma or quotes, and each its number, so the CSV path must quote them.
    private static func itemName(_ drawn: String, number k: Int) -> String {
        var name = drawn
        if k % 97 == 5 { name += ", お買い得" }            // a comma: must be quoted in CSV
        if k % 211 == 7 { name = "\"限定\" " + name }       // quotes: doubled inside a quoted field
        return name.trimmingCharacters(in: .whitespaces) + " #\(k + 1)"
    }

    /// `interact.csv` from the drawn rows, apart from `init`, which only draws.
    private static func interactionsCSV(_ rows: [(time: Int, user: Int, item: Int)]) -> String {
        // A transaction log: ordered by time, then user, then basket order.
        let ordered = rows.enumerated().sorted { a, b in
            (a.element.time, a.element.user, a.offset) < (b.element.time, b.element.user, b.offset)
        }.map(\.element)
        var interLines = ["user_id,item_id,timestamp"]
        interLines.reserveCapacity(ordered.count + 1)
        for r in ordered { interLines.append("\(r.user + 1),\(100_001 + r.item),\(MartSample.dateText(r.time))") }
        return interLines.joined(separator: "\n") + "\n"
    }

    /// `items.csv` from the drawn names and categories, apart from `init`, which only draws.
    private static func itemsCSV(names itemNames: [String], categories itemCategory: [Int]) -> String {
        var itemLines = ["item_id,item_name,item_category_id"]
        for k in 0..<itemNames.count {
            let name = itemNames[k]
            let quoted = name.contains(",") || name.contains("\"") ? "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : name
            itemLines.append("\(100_001 + k),\(quoted),c\(String(format: "%02d", itemCategory[k] + 1))")
        }
        return itemLines.joined(separator: "\n") + "\n"
    }

    /// `YYYY-MM-DD HH:MM:SS` for Unix seconds (UTC arithmetic; written as shop-local time).
    static func dateText(_ seconds: Int) -> String {
        let days = seconds / 86_400, rest = seconds % 86_400
        // Civil from days (H. Hinnant).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return String(format: "%04d-%02d-%02d %02d:%02d:%02d", y, m, d, rest / 3600, rest % 3600 / 60, rest % 60)
    }
}

import Foundation
