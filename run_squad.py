"""Fine-tunes and predicts SQuAD 1.1 or, with `--version_2_with_negative`, SQuAD 2.0 with ALBERT, as the original
`run_squad_v1.py` / `run_squad_v2.py`: it reads the SQuAD JSON `--train_file` and `--predict_file`, the
model's `--albert_config_file` and `--spm_model_file`, and the initial weights of `--init_checkpoint`; it
writes the feature files (`--train_feature_file`, `--predict_feature_file`, `--predict_feature_left_file`,
default in `--output_dir`), `model.ckpt-<step>` checkpoints in `--output_dir`, and with `--do_predict` scores
every checkpoint (`eval_results.txt`, `best_trial.txt`, `model.ckpt-best`) and writes `predictions.json`,
`nbest_predictions.json` (v2: `null_odds.json`) from the best; `--export_dir` receives a SavedModel (v1 also
`albert_model.tflite`); checkpoints written by the original code in `--output_dir` are read as well.

SQuAD 2.0 uses the XLNet-style head with `--start_n_top`, `--end_n_top`, `--dropout_prob` and the null-score
threshold. Example (the README's SQuAD command):

    python run_squad.py --albert_config_file=albert_base/albert_config.json \\
      --spm_model_file=albert_base/30k-clean.model --init_checkpoint=albert_base/model.ckpt-best \\
      --train_file=train-v1.1.json --predict_file=dev-v1.1.json --train_feature_file=train.tf_record \\
      --predict_feature_file=dev.tf_record --predict_feature_left_file=dev_left_file.json \\
      --output_dir=squad_out --do_train --do_predict --max_seq_length=384 --doc_stride=128 \\
      --max_query_length=64 --train_batch_size=48 --learning_rate=5e-5 --num_train_epochs=2.0 \\
      --warmup_proportion=.1 --n_best_size=20 --max_answer_length=30
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.training import flags as runtime_flags  # noqa: E402
from albert_tf.training import squad_task  # noqa: E402

FLAGS = flags.FLAGS
CLI_HELP = __doc__.split("\n\n")[0]

## Required parameters
flags.DEFINE_string("albert_config_file", None,
                    "The config json file corresponding to the pre-trained ALBERT model. "
                    "This specifies the model architecture.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained on.")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")

## Other parameters
flags.DEFINE_string("train_file", None, "SQuAD json for training. E.g., train-v1.1.json")
flags.DEFINE_string("predict_file", None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json")
flags.DEFINE_string("train_feature_file", None,
                    "training feature file (TFRecord), written if it does not exist "
                    "(default <output_dir>/train.tf_record).")
flags.DEFINE_string("predict_feature_file", None,
                    "Location of predict features. If it doesn't exist, it will be written. If it does exist, it "
                    "will be read (default <output_dir>/predict.tf_record).")
flags.DEFINE_string("predict_feature_left_file", None,
                    "Location of predict features not passed to TPU. If it doesn't exist, it will be written. If "
                    "it does exist, it will be read. Stored as JSON (the original's pickle is never loaded; "
                    "default <output_dir>/predict_left_file.json).")
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_string("albert_hub_module_handle", None, "If set, the ALBERT hub module to use.")
flags.DEFINE_bool("do_lower_case", True,
                  "Whether to lower case the input text. Should be True for uncased models and False for cased "
                  "models.")
flags.DEFINE_integer("max_seq_length", 384,
                     "The maximum total input sequence length after WordPiece tokenization. Sequences longer than "
                     "this will be truncated, and sequences shorter than this will be padded.")
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to take between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Questions longer than this will be "
                     "truncated to this length.")
flags.DEFINE_bool("do_train", False, "Whether to run training.")
flags.DEFINE_bool("do_predict", False, "Whether to run eval on the dev set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predictions.")
flags.DEFINE_float("learning_rate", 5e-5, "The initial learning rate for Adam.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for. E.g., 0.1 = 10% of "
                   "training.")
flags.DEFINE_integer("save_checkpoints_steps", 1000, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the nbest_predictions.json output "
                     "file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated. This is needed because the start and "
                     "end predictions are not conditioned on one another.")
flags.DEFINE_bool("use_einsum", True,
                  "Whether to use tf.einsum or tf.reshape+tf.matmul for dense layers. Must be set to False for "
                  "TFLite compatibility (accepted for the original's flag; the Keras layers need no switch).")
flags.DEFINE_string("export_dir", None, "The directory where the exported SavedModel will be stored.")
flags.DEFINE_bool("version_2_with_negative", False,
                  "SQuAD 2.0 (questions without answer, XLNet-style head of run_squad_v2.py); else SQuAD 1.1.")
flags.DEFINE_float("null_score_diff_threshold", None,
                   "SQuAD 2.0: answer \"\" when the null score diff is >= this value. Unset: tuned on the predict "
                   "file for the best F1, as the original run_squad_v2.py.")
flags.DEFINE_integer("start_n_top", 5, "beam size for the start positions.")
flags.DEFINE_integer("end_n_top", 5, "beam size for the end positions.")
flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
runtime_flags.define_runtime_flags()
runtime_flags.define_seed_and_memory_flags()


def main(argv):
    del argv
    squad_task.run_squad(
        output_dir=FLAGS.output_dir, albert_config_file=FLAGS.albert_config_file,
        spm_model_file=FLAGS.spm_model_file, vocab_file=FLAGS.vocab_file, train_file=FLAGS.train_file,
        predict_file=FLAGS.predict_file, train_feature_file=FLAGS.train_feature_file,
        predict_feature_file=FLAGS.predict_feature_file, predict_feature_left_file=FLAGS.predict_feature_left_file,
        init_checkpoint=FLAGS.init_checkpoint, albert_hub_module_handle=FLAGS.albert_hub_module_handle,
        do_lower_case=FLAGS.do_lower_case, max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length, do_train=FLAGS.do_train, do_predict=FLAGS.do_predict,
        train_batch_size=FLAGS.train_batch_size, predict_batch_size=FLAGS.predict_batch_size,
        learning_rate=FLAGS.learning_rate, num_train_epochs=FLAGS.num_train_epochs,
        warmup_proportion=FLAGS.warmup_proportion, save_checkpoints_steps=FLAGS.save_checkpoints_steps,
        iterations_per_loop=FLAGS.iterations_per_loop, n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length, version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold, start_n_top=FLAGS.start_n_top,
        end_n_top=FLAGS.end_n_top, dropout_prob=FLAGS.dropout_prob, use_einsum=FLAGS.use_einsum,
        export_dir=FLAGS.export_dir, **runtime_flags.runtime_kwargs(FLAGS))


if __name__ == "__main__":
    flags.mark_flag_as_required("spm_model_file")
    flags.mark_flag_as_required("albert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run_app(main, __doc__, ["albert_tf.training.flags"])
