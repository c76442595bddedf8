// Loads an albert-export --format=mediapipe classifier with MediaPipe's TextClassifier and classifies what is
// typed. The page's only dependency is @mediapipe/tasks-text (npm); nothing is fetched from a CDN.
import {FilesetResolver, TextClassifier} from "./node_modules/@mediapipe/tasks-text/text_bundle.mjs";

const params = new URLSearchParams(window.location.search);
const modelUrl = params.get("model") || "model/model.tflite";
const status = document.getElementById("status");
const input = document.getElementById("sentence");
const button = document.getElementById("classify");
const answers = document.getElementById("answers");

function classify(classifier, sentence) {
  const categories = classifier.classify(sentence).classifications[0].categories;
  const scores = Object.fromEntries(categories.map((c) => [c.categoryName, c.score]));
  const best = categories.reduce((a, b) => (b.score > a.score ? b : a));
  const item = document.createElement("li");
  item.textContent = `${sentence} → ${best.categoryName} (${best.score.toFixed(4)})`;
  answers.appendChild(item);
  return scores;
}

async function typeIn(classifier, sentences) {
  // Types each sentence into the box and submits the form, as a user does.
  const results = [];
  for (const sentence of sentences) {
    input.value = sentence;
    const answered = new Promise((resolve) => {
      document.getElementById("form").addEventListener("answer", (e) => resolve(e.detail), {once: true});
    });
    button.click();
    results.push(await answered);
  }
  return results;
}

async function main() {
  const fileset = await FilesetResolver.forTextTasks(new URL("node_modules/@mediapipe/tasks-text/wasm",
                                                             window.location.href).href);
  const classifier = await TextClassifier.createFromOptions(fileset, {
    baseOptions: {modelAssetPath: modelUrl}, maxResults: -1});
  document.getElementById("form").addEventListener("submit", (event) => {
    event.preventDefault();
    const scores = classify(classifier, input.value);
    event.target.dispatchEvent(new CustomEvent("answer", {detail: scores}));
  });
  input.disabled = button.disabled = false;
  status.textContent = `Model: ${modelUrl}`;
  if (params.has("sentences")) {
    const results = await typeIn(classifier, JSON.parse(params.get("sentences")));
    await fetch(params.get("report"), {method: "POST", body: JSON.stringify(results)});
  }
}

main().catch(async (error) => {
  status.textContent = `Error: ${error}`;
  if (params.has("report")) {
    await fetch(params.get("report"), {method: "POST", body: JSON.stringify({error: String(error)})});
  }
});
