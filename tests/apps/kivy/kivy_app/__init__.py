"""Kivy: a real window on the X server in $DISPLAY (SDL2, OpenGL through the system's Mesa),
drawn on a widget's canvas: white, a red rectangle, a blue disc. Kivy's default theme (an atlas
image in kivy/data, inside the executable) is loaded by SDL2_image's C code by path, and a label
draws "ingot" with its bundled font. `kivy-app DIR` writes DIR/ready (with what it drew), then
waits for DIR/done."""

import json
import os
import sys


def main():
    directory = sys.argv[1]
    os.environ.update(KIVY_NO_ARGS="1", KIVY_NO_CONSOLELOG="1", KIVY_NO_FILELOG="1",
                      KIVY_HOME=os.path.join(directory, "kivy-home"))
    from kivy.config import Config

    Config.set("graphics", "width", "200")
    Config.set("graphics", "height", "120")
    Config.set("graphics", "resizable", "0")
    from kivy.app import App
    from kivy.clock import Clock
    from kivy.core.window import Window
    from kivy.graphics import Color, Ellipse, Rectangle
    from kivy.uix.label import Label
    from kivy.uix.widget import Widget

    report = {}

    class Drawing(Widget):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.canvas:
                Color(1, 1, 1)
                Rectangle(pos=(0, 0), size=(200, 120))
                Color(200 / 255, 30 / 255, 30 / 255)
                Rectangle(pos=(20, 40), size=(100, 60))  # (y up: 20..80 from the top)
                Color(30 / 255, 60 / 255, 200 / 255)
                Ellipse(pos=(140, 40), size=(40, 40))
            self.add_widget(Label(text="ingot", color=(0, 0, 0, 1), pos=(20, 0),
                                  size=(60, 30), font_size=16))

    class IngotApp(App):
        title = "ingot kivy"

        def build(self):
            return Drawing()

        def on_start(self):
            import kivy
            from kivy.atlas import Atlas

            atlas = Atlas(os.path.join(os.path.dirname(kivy.__file__), "data", "images",
                                       "defaulttheme.atlas"))
            report.update(
                window=Window.__class__.__name__,
                size=list(Window.size),
                theme_textures=len(atlas.textures),
            )
            Clock.schedule_once(announce, 0.5)
            Clock.schedule_interval(poll, 0.05)
            Clock.schedule_once(lambda dt: self.stop(), 60)

    def announce(dt):
        with open(os.path.join(directory, "ready.tmp"), "w") as file:
            json.dump(report, file)
        os.rename(os.path.join(directory, "ready.tmp"), os.path.join(directory, "ready"))

    def poll(dt):
        if os.path.exists(os.path.join(directory, "done")):
            App.get_running_app().stop()

    IngotApp().run()
    print(json.dumps(report))
