"""PySide6: a real window on the X server in $DISPLAY, through Qt's xcb platform plugin (found by
listing PySide6/Qt/plugins/platforms, then loaded by path: the build gives PySide6 real files) and
the system's X client libraries, with text in a font fontconfig finds. The window stays up until
the test has taken its screenshot: `pyside6-app DIR` writes DIR/ready, then waits for DIR/done.

With QT_QPA_PLATFORM=offscreen (the offscreen platform plugin, no display): the window is drawn
into an image, which goes through the JPEG image-format plugin (written to DIR, read back); the
app says what it saw and exits."""

import json
import os
import sys


def main():
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QColor, QFont, QFontDatabase, QImage, QImageReader, QPainter
    from PySide6.QtWidgets import QApplication, QWidget

    directory = sys.argv[1]

    class Canvas(QWidget):
        def paintEvent(self, event):
            painter = QPainter(self)
            painter.fillRect(self.rect(), QColor(255, 255, 255))
            painter.fillRect(20, 20, 100, 60, QColor(200, 30, 30))
            painter.setBrush(QColor(30, 60, 200))
            painter.setPen(QColor(30, 60, 200))
            painter.drawEllipse(140, 40, 40, 40)
            painter.setPen(QColor(0, 0, 0))
            painter.setFont(QFont("DejaVu Sans", 14))
            painter.drawText(20, 112, "ingot")
            painter.end()

    app = QApplication([sys.argv[0]])
    window = Canvas()
    window.setWindowTitle("ingot pyside6")
    window.setFixedSize(200, 120)
    window.show()
    formats = {name.data().decode() for name in QImageReader.supportedImageFormats()}
    report = {
        "platform": app.platformName(),
        "size": [window.width(), window.height()],
        "formats": sorted(formats & {"gif", "ico", "jpeg", "svg", "tiff", "webp"}),
        "fonts": "DejaVu Sans" in QFontDatabase.families(),
    }
    if app.platformName() == "offscreen":
        app.processEvents()
        image = window.grab().toImage()
        report["pixels"] = {
            f"{x},{y}": list(image.pixelColor(x, y).getRgb()[:3])
            for x, y in ((5, 5), (50, 50), (160, 60))
        }
        path = os.path.join(directory, "window.jpg")
        report["jpeg"] = image.save(path, "JPEG", 95)
        report["jpeg_pixel"] = list(QImage(path).pixelColor(50, 50).getRgb()[:3])
        print(json.dumps(report))
        return

    def announce():
        with open(os.path.join(directory, "ready.tmp"), "w") as file:
            json.dump(report, file)
        os.rename(os.path.join(directory, "ready.tmp"), os.path.join(directory, "ready"))

    def poll():
        if os.path.exists(os.path.join(directory, "done")):
            app.quit()

    QTimer.singleShot(500, announce)  # (once the window is mapped and painted)
    timer = QTimer()
    timer.timeout.connect(poll)
    timer.start(50)
    QTimer.singleShot(60000, app.quit)
    app.exec()
    print(json.dumps(report))
