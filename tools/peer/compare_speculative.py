"""Speculative decoding by prompt lookup, xlacel against llama.cpp, on the same GGUF and threads:
decode tok/s with speculation off and on, on input-grounded tasks (a code file rewritten with a
rename, a summary quoting its text, fields extracted to JSON) and on open chat, in alternating
rounds, each request alone (one slot) and greedy.

  .venv/bin/python tools/peer/compare_speculative.py [--model GGUF] [--threads 2] [--rounds 3]
      [--max-tokens 256] [--draft-max 3] [--peer-spec-type ngram-simple] [--tasks rename,chat]
      [--template TEXT] [-- extra xlacel serve flags]
  .venv/bin/python tools/peer/compare_speculative.py --streams 8 [--rounds 3] [--max-tokens 128]

Decode tok/s is measured by the client on the streamed chunks: (completion tokens - 1) / (last
chunk - first chunk), for both servers alike. Acceptance: xlacel's /metrics (accepted / drafted),
llama.cpp's `timings` (draft_n_accepted / draft_n) where it reports them. Each server's text with
speculation is compared with its text without (greedy speculation must not change it).
llama-server comes from tools/peer/build_llama_cpp (the pinned llama-cpp-python sdist)."""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../tests/server"))
from compare_servers import free_port, wait_healthy  # noqa: E402
from server_process import ServerProcess, xlacel_path  # noqa: E402

CODE = '''import csv
import statistics


def load_rows(path):
    rows = []
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            rows.append(row)
    return rows


def summarize(rows, column):
    values = [float(row[column]) for row in rows if row[column]]
    if not values:
        return None
    return {
        "count": len(values),
        "mean": statistics.mean(values),
        "median": statistics.median(values),
        "lowest": min(values),
        "highest": max(values),
    }


def report(path, column):
    rows = load_rows(path)
    result = summarize(rows, column)
    if result is None:
        print(f"no values in column {column}")
        return
    for key, value in result.items():
        print(f"{key}: {value}")
'''

ARTICLE = (
    "The town council voted on Monday to close Harbor Street to cars every Saturday from June "
    "to September. Mayor Ellen Park said the change \"gives the waterfront back to the people "
    "who walk it.\" Shop owners were divided: Tom Reyes, who runs a bakery on the corner, said "
    "\"my Saturday sales depend on people who park right outside,\" while Ana Silva of the "
    "bookshop said \"every street fair we have held doubled my customers.\" The council will "
    "review the trial in October, after counting visitors with sensors at both ends of the "
    "street. Parking on Mill Road will be free on Saturdays while the trial runs.")

LETTER = (
    "Dear Ms. Moreau,\n\nThank you for your order number 48213, placed on 3 March 2026. We "
    "shipped two items: a walnut desk lamp (item 7731, 89.00 EUR) and a linen lampshade (item "
    "7740, 24.50 EUR). Delivery is to 12 Rue des Lilas, 69003 Lyon, France, by Colis Express, "
    "tracking number CX-99120-FR, expected on 9 March 2026. The total charged to your card "
    "ending in 4417 was 113.50 EUR including shipping.\n\nKind regards,\nJonas Berg, Customer "
    "Service")

TASKS = {
    "rename": "Rewrite this Python file with the function `summarize` renamed to "
              "`describe_column` everywhere. Output the whole file and nothing else.\n\n" + CODE,
    "quote": "Summarize this news story in three sentences, quoting each person's words "
             "exactly as written.\n\n" + ARTICLE,
    "extract": "Extract the order number, the date, each item's name, number and price, the "
               "address, the carrier, the tracking number and the total from this letter, as "
               "one JSON object.\n\n" + LETTER,
    "chat": "Write a short story about a lighthouse keeper who finds a strange bottle on the "
            "beach.",
}


def stream_chat(base_url, model, prompt, max_tokens, template=None):
    """One greedy streamed request: its text, completion tokens, decode tok/s and the last
    chunk's `timings` (llama.cpp). With a `template` (its {prompt} replaced), a completion of
    that text instead of a chat (a model file without a chat template)."""
    url = urllib.parse.urlparse(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=600)
    body = {"model": model, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if template:
        body["prompt"] = template.replace("{prompt}", prompt)
    else:
        body["messages"] = [{"role": "user", "content": prompt}]
    connection.request("POST", url.path + ("/completions" if template else "/chat/completions"),
                       json.dumps(body),
                       {"Content-Type": "application/json", "Authorization": "Bearer unused"})
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(f"{base_url}: HTTP {response.status}: {response.read()[:300]}")
    text, tokens, timings, first, last = "", None, None, None, None
    for raw in response:
        line = raw.decode("utf-8").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[len("data: "):])
        now = time.perf_counter()
        for choice in chunk.get("choices", []):
            content = choice.get("delta", {}).get("content") or choice.get("text")
            if content:
                text += content
                first = first or now
                last = now
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        if chunk.get("timings"):
            timings = chunk["timings"]
    connection.close()
    rate = (tokens - 1) / (last - first) if tokens and last and last > first else float("nan")
    return text, tokens, rate, timings


def xlacel_counters(server):
    url = urllib.parse.urlparse(server.base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    connection.request("GET", "/metrics")
    body = connection.getresponse().read().decode()
    counters = {}
    for line in body.splitlines():
        if line.startswith(("xlacel_drafted_tokens_total", "xlacel_accepted_tokens_total")):
            name, value = line.split()
            counters[name] = float(value)
    return counters


def streams_mode(args):
    """--streams P: xlacel serve with speculation off and on, P slots each, P concurrent clients
    (tools/serving/load.py: open-chat prompts), aggregate tok/s in alternating rounds."""
    sys.path.insert(0, os.path.join(here, "../serving"))
    from load import run_load  # noqa: E402
    servers = {}
    try:
        for name, spec in (("xlacel", ["--speculative", "off"]),
                           ("xlacel+spec", ["--speculative", "ngram", "--draft-max",
                                            str(args.draft_max)])):
            server = ServerProcess(xlacel_path(), "-m", args.model, "--parallel",
                                   str(args.streams), "--threads", str(args.threads),
                                   "--context", str(args.context), *spec, *args.serve_args)
            servers[name] = server
        models = {name: server.request("GET", "/v1/models")[1]["data"][0]["id"]
                  for name, server in servers.items()}
        for name, server in servers.items():  # warm-up
            run_load(server.base_url, models[name], clients=args.streams,
                     max_tokens=args.max_tokens, requests_per_client=2)
        rates = {name: [] for name in servers}
        for round_index in range(args.rounds):
            for name, server in servers.items():
                result = run_load(server.base_url, models[name], clients=args.streams,
                                  max_tokens=args.max_tokens, requests_per_client=2)
                rates[name].append(result.tokens_per_second())
                print(f"round {round_index + 1} {name:12s} {result.summary()}", flush=True)
        off, on = (statistics.median(rates[name]) for name in servers)
        print(f"\n{args.streams} streams, {os.path.basename(args.model)}: aggregate tok/s "
              f"(median of {args.rounds}) off {off:.1f}, speculative {on:.1f} ({on / off:.2f}x)")
    finally:
        for server in servers.values():
            server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.path.expanduser(
        "~/.cache/xlacel/models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--context", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--draft-max", type=int, default=3, help="xlacel's --draft-max")
    parser.add_argument("--peer-spec-type", default="ngram-simple",
                        help="llama-server's --spec-type for its speculative run")
    parser.add_argument("--peer-draft-max", type=int, default=0,
                        help="llama-server's --spec-draft-n-max (0: its default)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated: " +
                        ", ".join(TASKS))
    parser.add_argument("--template", help="a model file without a chat template: each task as "
                        "a completion of this text, {prompt} replaced by the task, e.g. Gemma 3's "
                        "'<start_of_turn>user\\n{prompt}<end_of_turn>\\n<start_of_turn>model\\n'")
    parser.add_argument("--streams", type=int, default=0,
                        help="instead: xlacel's aggregate tok/s over this many concurrent open-chat "
                             "streams, speculation off against on")
    parser.add_argument("serve_args", nargs="*")
    args = parser.parse_args()
    if args.streams > 0:
        streams_mode(args)
        return
    tasks = args.tasks.split(",")
    template = args.template.encode().decode("unicode_escape") if args.template else None

    bin_dir = subprocess.run([os.path.join(here, "build_llama_cpp")], check=True,
                             capture_output=True, text=True).stdout.strip()
    peers, servers = [], {}
    ours = []
    try:
        for name, spec in (("llama.cpp", []), ("llama.cpp+spec", ["--spec-type",
                                                                  args.peer_spec_type])):
            if spec and args.peer_draft_max > 0:
                spec += ["--spec-draft-n-max", str(args.peer_draft_max)]
            port = free_port()
            peer = subprocess.Popen(
                [os.path.join(bin_dir, "llama-server"), "-m", args.model, "--host", "127.0.0.1",
                 "--port", str(port), "-t", str(args.threads), "-tb", str(args.threads), "-np",
                 "1", "-c", str(args.context), *spec],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            peers.append(peer)
            wait_healthy(port, peer)
            servers[name] = (f"http://127.0.0.1:{port}/v1", "peer", None)
        for name, spec in (("xlacel", ["--speculative", "off"]),
                           ("xlacel+spec", ["--speculative", "ngram", "--draft-max",
                                            str(args.draft_max)])):
            server = ServerProcess(xlacel_path(), "-m", args.model, "--parallel", "1",
                                   "--threads", str(args.threads), "--context", str(args.context),
                                   *spec, *args.serve_args)
            ours.append(server)
            model = server.request("GET", "/v1/models")[1]["data"][0]["id"]
            servers[name] = (server.base_url, model, server)
        for name, (url, model, _) in servers.items():  # warm-up: graphs, windows, caches
            for task in tasks:
                stream_chat(url, model, TASKS[task], args.max_tokens, template)

        rates = {(task, name): [] for task in tasks for name in servers}
        accepted = {(task, name): [0.0, 0.0] for task in tasks for name in servers}
        texts = {}
        for round_index in range(args.rounds):
            for task in tasks:
                for name, (url, model, server) in servers.items():
                    before = xlacel_counters(server) if server else None
                    text, tokens, rate, timings = stream_chat(url, model, TASKS[task],
                                                              args.max_tokens, template)
                    rates[(task, name)].append(rate)
                    texts.setdefault((task, name), text)
                    if server:
                        after = xlacel_counters(server)
                        accepted[(task, name)][0] += (after["xlacel_accepted_tokens_total"] -
                                                      before["xlacel_accepted_tokens_total"])
                        accepted[(task, name)][1] += (after["xlacel_drafted_tokens_total"] -
                                                      before["xlacel_drafted_tokens_total"])
                    elif timings and "draft_n" in timings:
                        accepted[(task, name)][0] += timings.get("draft_n_accepted", 0)
                        accepted[(task, name)][1] += timings["draft_n"]
                    print(f"round {round_index + 1} {task:8s} {name:15s} {tokens} tokens, "
                          f"{rate:.1f} tok/s", flush=True)

        print(f"\n{os.path.basename(args.model)}, {args.threads} threads, max_tokens "
              f"{args.max_tokens}, xlacel --draft-max {args.draft_max}, llama.cpp --spec-type "
              f"{args.peer_spec_type}; decode tok/s, median of {args.rounds}")
        print("| task | server | tok/s | rounds | speculation / off | accepted / drafted | "
              "same text as off |")
        print("|---|---|---|---|---|---|---|")
        for task in tasks:
            for name in servers:
                median = statistics.median(rates[(task, name)])
                base = name.removesuffix("+spec")
                ratio = median / statistics.median(rates[(task, base)])
                good, drafted = accepted[(task, name)]
                share = f"{good:.0f} / {drafted:.0f}" if drafted else "-"
                same = "yes" if texts[(task, name)] == texts[(task, base)] else "NO"
                print(f"| {task} | {name} | {median:.1f} | "
                      f"{', '.join(f'{v:.1f}' for v in rates[(task, name)])} | {ratio:.2f}x | "
                      f"{share} | {same} |")
    finally:
        for peer in peers:
            peer.terminate()
            peer.wait(30)
        for server in ours:
            server.stop()


if __name__ == "__main__":
    main()
