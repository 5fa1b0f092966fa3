"""pygame: a real window on the X server in $DISPLAY (SDL 2, which loads libX11 from the
system), drawn, with text in pygame's default font (freesansbold.ttf: its C code reopens the
file by name, so the build gives pygame real files). The window stays up until the test has
taken its screenshot: `pygame-app DIR` writes DIR/ready (with what it drew), then waits for
DIR/done."""

import json
import os
import sys
import time


def main():
    import pygame

    directory = sys.argv[1]
    pygame.display.init()
    pygame.font.init()
    pygame.display.set_caption("ingot pygame")
    screen = pygame.display.set_mode((200, 120))
    screen.fill((255, 255, 255))
    pygame.draw.rect(screen, (200, 30, 30), (20, 20, 100, 60))
    pygame.draw.circle(screen, (30, 60, 200), (160, 60), 20)
    text = pygame.font.Font(None, 24).render("ingot", True, (0, 0, 0))
    screen.blit(text, (20, 90))
    pygame.display.flip()
    report = {
        "driver": pygame.display.get_driver(),
        "size": list(screen.get_size()),
        "text_size": list(text.get_size()),
    }
    with open(os.path.join(directory, "ready.tmp"), "w") as file:
        json.dump(report, file)
    os.rename(os.path.join(directory, "ready.tmp"), os.path.join(directory, "ready"))
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(directory, "done")) and time.monotonic() < deadline:
        pygame.event.pump()
        time.sleep(0.05)
    pygame.quit()
    print(json.dumps(report))
