"""OpenCV's Haar cascades: `cv2.data.haarcascades` is a directory next to cv2's `__file__`,
inside the executable, and CascadeClassifier's C++ code opens the XML file there itself
(`cv::FileStorage`, through the C library's open), then detects on an image."""

import json
import os


def main():
    import cv2
    import numpy

    path = os.path.join(cv2.data.haarcascades, "haarcascade_frontalface_default.xml")
    faces = cv2.CascadeClassifier(path)
    eyes = cv2.CascadeClassifier(os.path.join(cv2.data.haarcascades, "haarcascade_eye.xml"))
    blank = numpy.full((120, 160), 128, dtype=numpy.uint8)
    found = faces.detectMultiScale(blank, scaleFactor=1.1, minNeighbors=3)
    print(json.dumps({
        "path": path,
        "faces_loaded": not faces.empty(),
        "eyes_loaded": not eyes.empty(),
        "window": list(faces.getOriginalWindowSize()),
        "eye_window": list(eyes.getOriginalWindowSize()),
        "on_blank": len(found),
    }))
