"""Fine-tunes and predicts SQuAD 1.1 or, with `--version_2_with_negative`, SQuAD 2.0 with ALBERT, as the original
`run_squad_v1.py` / `run_squad_v2.py`: it reads the SQuAD JSON `--train_file` and `--predict_file`, the
model's `--albert_config_file` and `--spm_model_file` (default: those that come with `--init_checkpoint`, as
for the other runners), and the initial weights of `--init_checkpoint`; it
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

from albert_tf.training import driver
from albert_tf.tasks.squad import task as squad_task  # noqa: E402
from albert_tf.training import flags as runtime_flags  # noqa: E402
from albert_tf.training import options  # noqa: E402

FLAGS = flags.FLAGS
# The original SQuAD scripts have no separate evaluation: `--do_predict` scores every checkpoint.
SHARED_FLAGS = [name for name in runtime_flags.FINE_TUNING_FLAGS if name not in ("do_eval", "eval_batch_size")]

## Required parameters
runtime_flags.define_task_flags(SHARED_FLAGS, defaults={"max_seq_length": 384})

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
flags.DEFINE_integer("doc_stride", 128,
                     "When splitting up a long document into chunks, how much stride to take between chunks.")
flags.DEFINE_integer("max_query_length", 64,
                     "The maximum number of tokens for the question. Questions longer than this will be "
                     "truncated to this length.")
flags.DEFINE_float("num_train_epochs", 3.0, "Total number of training epochs to perform.")
flags.DEFINE_float("warmup_proportion", 0.1,
                   "Proportion of training to perform linear learning rate warmup for. E.g., 0.1 = 10% of "
                   "training.")
flags.DEFINE_integer("n_best_size", 20,
                     "The total number of n-best predictions to generate in the nbest_predictions.json output "
                     "file.")
flags.DEFINE_integer("max_answer_length", 30,
                     "The maximum length of an answer that can be generated. This is needed because the start and "
                     "end predictions are not conditioned on one another.")
flags.DEFINE_bool("use_einsum", True,
                  "Whether to use tf.einsum or tf.reshape+tf.matmul for dense layers. Must be set to False for "
                  "TFLite compatibility (accepted for the original's flag; the Keras layers need no switch).")
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

# Each flag -> the option field it sets.
FLAG_TABLE = options.FlagTable(
    options.SquadOptions,
    dict(**runtime_flags.task_flag_fields(SHARED_FLAGS), **runtime_flags.runtime_flag_fields(),
         train_file="train_file", predict_file="predict_file", train_feature_file="train_feature_file",
         predict_feature_file="predict_feature_file", predict_feature_left_file="predict_feature_left_file",
         doc_stride="doc_stride", max_query_length="max_query_length", num_train_epochs="num_train_epochs",
         warmup_proportion="warmup_proportion", n_best_size="n_best_size", max_answer_length="max_answer_length",
         use_einsum="use_einsum", version_2_with_negative="version_2_with_negative",
         null_score_diff_threshold="null_score_diff_threshold", start_n_top="start_n_top", end_n_top="end_n_top",
         dropout_prob="dropout_prob"),
    no_flag=("gradient_accumulation_steps",))


def main(argv):
    del argv
    driver.run(squad_task.SquadTask, *options.from_flags(FLAGS, FLAG_TABLE, __name__))


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    cli.run_app(main, __doc__, ["albert_tf.training.flags"])
