import Foundation
import RecBenchSupport
import RecBenchData
import RecBenchContract
/// Hyperparameters several models read, each declared here once with one meaning: a model
/// lists `SharedKeys.embeddingSize(64)` with its own default (RecBole's for that model), so
/// one config drives a sweep over several models and the key means the same in each. A key
/// only one model reads is declared in that model's file (`ModelDeclarationTests` fails when
/// two models declare one name with different types or summaries). A summary names no model (alpha
/// and latent_dimension still do):
/// what the key does in a model is that model's file's to say, so adding a model edits nothing here.
public enum SharedKeys {
    /// The width of the learned embeddings.
    public static func embeddingSize(_ width: Int) -> ConfigKey {
        ConfigKey("embedding_size", "int", .int(width),
                  "Width of the learned embeddings: of users and items, or of every feature field (context-aware models).")
            .searched(.choice([width / 2, width, width * 2].map(ConfigValue.int)))
    }

    /// Dropout while training.
    public static func dropoutProb(_ probability: Double) -> ConfigKey {
        ConfigKey("dropout_prob", "float", .double(probability),
                  "Dropout probability while training; where it applies is the model's (its file and docs/models.md say).")
            .searched(.uniform(low: 0, high: 0.8))
    }

    /// The hidden layers of the model's MLP.
    public static func mlpHiddenSize(_ widths: [Int]) -> ConfigKey {
        ConfigKey("mlp_hidden_size", "list of int", .list(widths.map { .int($0) }),
                  "Widths of the MLP's hidden layers, each followed by the model's activation (the auto-encoders' encoder, mirrored in the decoder).")
    }

    /// The weight of the model's regulariser.
    /// Searched log-uniformly over two decades either side of a positive default.
    public static func regWeight(_ weight: Double) -> ConfigKey {
        let key = regWeight(.double(weight))
        return weight > 0 ? key.searched(.loguniform(low: log(weight / 100), high: log(weight * 100))) : key
    }

    /// The weights of a model with two regularisers (SHAN), under RecBole's same key.
    public static func regWeights(_ weights: [Double]) -> ConfigKey { regWeight(.list(weights.map { .double($0) })) }

    private static func regWeight(_ value: ConfigValue) -> ConfigKey {
        ConfigKey("reg_weight", "float, or a list of floats (one per regulariser)", value,
                  "Weight λ of the model's regulariser; what it penalises is the model's (its file and docs/models.md say).")
    }

    /// RecBole's `reg_weights`: one weight per penalised part, in the model's order (its file says which).
    public static func regWeightList(_ weights: [Double]) -> ConfigKey {
        ConfigKey("reg_weights", "list of float", .list(weights.map { .double($0) }),
                  "Weights of the norms a model penalises, in its order (MacridVAE: embeddings, encoder; "
                      + "NAIS: source embeddings, target embeddings, attention weights).")
    }

    /// RecBole's grouping of input columns into fields (FFM, FwFM).
    public static let fieldGroups = ConfigKey("fields", "map or null", .null,
        "Field groups, group → list of columns (every model input column in exactly one group); null: every column is its own group "
            + "(FFM; FwFM takes null only: RecBole's grouping there misaligns its embeddings, see docs/models.md).")

    /// The width of a model's attention network or space.
    public static func attentionSize(_ width: Int) -> ConfigKey {
        ConfigKey("attention_size", "int", .int(width),
                  "Width of the model's attention (AFM: its attention network's hidden layer; AutoInt: the fields' projections, num_heads dividing it).")
    }

    /// Dropout probabilities at the model's several places, in order.
    public static func dropoutProbs(_ probabilities: [Double]) -> ConfigKey {
        ConfigKey("dropout_probs", "list of float", .list(probabilities.map { .double($0) }),
                  "Dropout probabilities in order (NARM: item embeddings, then the joined encodings; "
                      + "AutoInt: attention weights, MLP layers, and a third RecBole 1.2.1 reads but never applies).")
    }

    /// RecBole's name for a model's second coefficient.
    public static func beta(_ value: Double) -> ConfigKey {
        ConfigKey("beta", "float", .double(value),
                  "The model's β, as RecBole names it (RecVAE: constant KL weight, used when gamma is 0; "
                      + "NAIS: smoothing exponent of the attention softmax's denominator, 1 a plain softmax).")
    }

    /// The width of an auto-encoder's code.
    public static func latentDimension(_ width: Int) -> ConfigKey {
        ConfigKey("latent_dimension", "int", .int(width),
                  "Width of an auto-encoder's code (MultiVAE: the encoder's output, even, whose halves are μ and log σ², as RecBole reads it).")
    }

    /// RecBole's name for a model's main coefficient.
    public static func alpha(_ value: Double) -> ConfigKey {
        let key = ConfigKey("alpha", "float", .double(value),
                  "The model's α, as RecBole names it (SLIMElastic: elastic-net strength, scikit-learn's scaling; "
                      + "ALS: confidence slope, c = 1 + α · count; FOSSIL: the similarity term is divided by len^α; "
                      + "NAIS: the attention sum is divided by n_u^α).")
        // Searched log-uniformly over a decade either side of a positive default.
        return value > 0 ? key.searched(.loguniform(low: log(value / 10), high: log(value * 10))) : key
    }

    /// Lock-free SGD on every thread.
    public static func hogwild(_ on: Bool) -> ConfigKey {
        ConfigKey("hogwild", "bool", .bool(on),
                  "Train by lock-free per-sample SGD on every thread (Hogwild!, as `implicit` and word2vec do) instead of the default loop; "
                  + "reruns then differ unless threads: 1.")
    }

    /// The KL weight's cap (variational auto-encoders).
    public static func annealCap(_ cap: Double) -> ConfigKey {
        ConfigKey("anneal_cap", "float", .double(cap), "Largest KL weight β of a variational auto-encoder.")
    }

    /// The KL weight's ramp (variational auto-encoders).
    public static func totalAnnealSteps(_ steps: Int) -> ConfigKey {
        ConfigKey("total_anneal_steps", "int", .int(steps), "Batches over which β grows linearly to anneal_cap (0: β = anneal_cap throughout).")
    }

    /// The width of a sequence model's hidden state.
    public static func hiddenSize(_ width: Int) -> ConfigKey {
        ConfigKey("hidden_size", "int", .int(width), "Width of a sequential model's hidden state (its GRU's or transformer's).")
    }

    /// Stacked GRU layers.
    public static func gruLayers(_ layers: Int) -> ConfigKey {
        ConfigKey("num_layers", "int", .int(layers), "Stacked GRU layers (of each GRU the model has).")
    }

    /// The training loss, by RecBole's name.
    public static func lossType(_ loss: String) -> ConfigKey {
        ConfigKey("loss_type", "CE or BPR (sequential models); BCE or MSE (auto-encoders)", .string(loss),
                  "The training loss, by RecBole's name: sequential models CE (softmax cross-entropy over every item, no sampled negatives) "
                  + "or BPR (sample_num negatives per example, drawn as train_neg_sample_args says); auto-encoders BCE or MSE over every item.")
    }

    /// Stacked layers of a sequence encoder.
    public static func layerCount(_ layers: Int) -> ConfigKey {
        ConfigKey("n_layers", "int", .int(layers), "Stacked layers of the model's encoder: propagation layers, GRU layers or transformer layers.")
    }
}
