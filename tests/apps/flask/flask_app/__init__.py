"""Flask renders a page from templates/ (inheritance, autoescaping), serves a file of static/
and answers JSON, all through its test client."""

import json

from flask import Flask, jsonify, render_template

app = Flask(__name__)


@app.route("/")
def index():
    return render_template("page.html", title="From memory", items=["ingot", "<script>"])


@app.route("/api/<name>")
def api(name):
    return jsonify(hello=name)


def main():
    client = app.test_client()
    page = client.get("/")
    style = client.get("/static/style.css")
    missing = client.get("/static/nothing.css")
    answer = client.get("/api/ingot")
    print(json.dumps({
        "page": [page.status_code, page.get_data(as_text=True)],
        "style": [style.status_code, style.get_data(as_text=True), style.headers["Content-Type"]],
        "missing": missing.status_code,
        "api": [answer.status_code, answer.get_json()],
        "templates": sorted(app.jinja_env.list_templates()),
    }))
