from django.urls import path

from django_app.polls import views

urlpatterns = [path("", views.index)]
