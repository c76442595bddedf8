"""Fine-tunes, evaluates and predicts RACE with ALBERT, as the original `run_race.py`: it reads the
`RACE/{train,dev,test}/{middle,high}` files under `--data_dir`, the model's `--albert_config_file` and
`--spm_model_file` (or those of a release directory given as `--init_checkpoint`), and the initial weights;
it writes cached `{train,eval,predict}.tf_record` features and `model.ckpt-<step>` checkpoints in
`--output_dir`, scores every checkpoint on the dev set (`eval_results.txt`, `best_trial.txt`,
`model.ckpt-best`), writes `predict_results.txt` and `predictions.tsv` for the test set with `--do_predict`,
and a SavedModel in `--export_dir`; checkpoints written by the original code in `--output_dir` are read as
well.

Example (the README's command):

    python run_race.py --data_dir=$DATA --albert_config_file=$ALBERT/albert_config.json \\
      --spm_model_file=$ALBERT/30k-clean.model --init_checkpoint=$ALBERT/model.ckpt-best \\
      --output_dir=$OUT --max_seq_length=512 --max_qa_length=128 --train_batch_size=32 \\
      --learning_rate=1e-5 --train_step=12000 --warmup_step=1000 --save_checkpoints_steps=100
"""

from absl import flags

from albert_tf import cli

# TensorFlow reads its log level once, when it loads: set it before the imports below load it.
cli.quiet_tensorflow_start()

from albert_tf.training import flags as runtime_flags  # noqa: E402
from albert_tf.training.race_task import run_race  # noqa: E402

FLAGS = flags.FLAGS
CLI_HELP = __doc__.split("\n\n")[0]

## Required parameters
flags.DEFINE_string("data_dir", None, "The input data dir. Should contain `RACE/{train,dev,test}/{middle,high}` "
                    "(per-level `all.txt` JSON lines or the per-article `*.txt` files).")
flags.DEFINE_string("albert_config_file", None, "The config json file corresponding to the pre-trained ALBERT "
                    "model. This specifies the model architecture.")
flags.DEFINE_string("task_name", "race", "The name of the task to train.")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the ALBERT model was trained on.")
flags.DEFINE_string("train_file", None, "path to preprocessed tfrecord file. The file will be generated if not "
                    "exst. Default: <output_dir>/train.tf_record.")
flags.DEFINE_string("eval_file", None, "path to preprocessed tfrecord file. The file will be generated if not "
                    "exst. Default: <output_dir>/eval.tf_record.")
flags.DEFINE_string("predict_file", None, "path to preprocessed tfrecord file. The file will be generated if "
                    "not exst. Default: <output_dir>/predict.tf_record.")
flags.DEFINE_string("spm_model_file", None, "The model file for sentence piece tokenization.")
flags.DEFINE_string("output_dir", None, "The output directory where the model checkpoints will be written.")

## Other parameters
flags.DEFINE_string("init_checkpoint", None, "Initial checkpoint (usually from a pre-trained ALBERT model).")
flags.DEFINE_string("albert_hub_module_handle", None, "If set, the ALBERT hub module to use.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text. Should be True for uncased "
                  "models and False for cased models.")
flags.DEFINE_float("dropout_prob", 0.1, "dropout probability.")
flags.DEFINE_integer("max_seq_length", 512, "The maximum total input sequence length after tokenization. "
                     "Sequences longer than this will be truncated, and sequences shorter than this will be "
                     "padded.")
flags.DEFINE_integer("max_qa_length", 128, "The maximum number of tokens of question+option (the last ones "
                     "are kept).")
flags.DEFINE_integer("num_keep_checkpoint", 5, "maximum number of keep checkpoints (unused, as in the original).")
flags.DEFINE_bool("high_only", False, "Whether to only run the model on the high school set.")
flags.DEFINE_bool("middle_only", False, "Whether to only run the model on the middle school set.")
flags.DEFINE_bool("do_train", True, "Whether to run training.")
flags.DEFINE_bool("do_eval", True, "Whether to run eval on the dev set.")
flags.DEFINE_bool("do_predict", False, "Whether to run the model in inference mode on the test set.")
flags.DEFINE_integer("train_batch_size", 32, "Total batch size for training.")
flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
flags.DEFINE_float("learning_rate", 1e-5, "The initial learning rate for Adam.")
flags.DEFINE_integer("train_step", 12000, "Total number of training steps to perform.")
flags.DEFINE_integer("warmup_step", 1000, "number of steps to perform linear learning rate warmup for.")
flags.DEFINE_integer("save_checkpoints_steps", 100, "How often to save the model checkpoint.")
flags.DEFINE_integer("iterations_per_loop", 1000, "How many steps to make in each estimator call.")
flags.DEFINE_string("export_dir", None, "If set, export a SavedModel of the best model to this directory.")
runtime_flags.define_runtime_flags(gradient_accumulation=True)
runtime_flags.define_seed_and_memory_flags()


def main(_):
    run_race(
        data_dir=FLAGS.data_dir, output_dir=FLAGS.output_dir, albert_config_file=FLAGS.albert_config_file,
        spm_model_file=FLAGS.spm_model_file, vocab_file=FLAGS.vocab_file, task_name=FLAGS.task_name,
        train_file=FLAGS.train_file, eval_file=FLAGS.eval_file, predict_file=FLAGS.predict_file,
        init_checkpoint=FLAGS.init_checkpoint, albert_hub_module_handle=FLAGS.albert_hub_module_handle,
        do_lower_case=FLAGS.do_lower_case, dropout_prob=FLAGS.dropout_prob, max_seq_length=FLAGS.max_seq_length,
        max_qa_length=FLAGS.max_qa_length, num_keep_checkpoint=FLAGS.num_keep_checkpoint,
        high_only=FLAGS.high_only, middle_only=FLAGS.middle_only, do_train=FLAGS.do_train,
        do_eval=FLAGS.do_eval, do_predict=FLAGS.do_predict, train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size, predict_batch_size=FLAGS.predict_batch_size,
        learning_rate=FLAGS.learning_rate, train_step=FLAGS.train_step, warmup_step=FLAGS.warmup_step,
        save_checkpoints_steps=FLAGS.save_checkpoints_steps, iterations_per_loop=FLAGS.iterations_per_loop,
        export_dir=FLAGS.export_dir, **runtime_flags.runtime_kwargs(FLAGS))


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("spm_model_file")
    flags.mark_flag_as_required("albert_config_file")
    flags.mark_flag_as_required("output_dir")
    cli.run_app(main, __doc__, ["albert_tf.training.flags"])
